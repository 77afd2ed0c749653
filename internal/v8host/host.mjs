// host.mjs: a proxy-wasm 0.2.1 host in Node.js (V8), for one purpose: run the compiled filter
// (dist/aidialect.wasm) and the floor filter under the engine Envoy uses by default, with the Envoy host
// rules internal/hostemu enforces under wazero (docs/envoy-host.md sections 1-5, traps).
//
// The rules that are data come from internal/hostemu/rules.json, the table hostemu embeds: which rule each
// check reports, the event-stream media type, the headers a local reply needs, the foreign functions, the read
// size of response bodies. The exchange logic mirrors hostemu's (Exchange.sendRequest, localReply,
// RelayResponse, bodyCallback, responseLocalReply, CheckContentLength, Finish), check by check; each check
// reports the id of its row in the table, and TestRuleTableUnderV8 plays every row's scenario here.
//
// Usage: node --no-liftoff host.mjs [--rules path/to/rules.json]
// (Envoy's V8 runs with liftoff off: proxy-wasm-cpp-host compiles every function with TurboFan.)
// Requests arrive on stdin, one JSON object per line; each gets one JSON line on stdout with the same "id".
// internal/v8host/driver.go speaks the protocol; the ops are listed in `ops` below. Header names and values
// travel as latin1 strings (one char per byte), bodies as base64.

import fs from 'node:fs';
import readline from 'node:readline';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';

// ---- the rule table ----------------------------------------------------------------------------------------

function rulesPath() {
  const i = process.argv.indexOf('--rules');
  if (i > 0 && process.argv[i + 1]) return process.argv[i + 1];
  return fileURLToPath(new URL('../hostemu/rules.json', import.meta.url));
}

const RULES = JSON.parse(fs.readFileSync(rulesPath(), 'utf8'));
const CHECKS = new Map(RULES.checks.map((c) => [c.id, c]));
const CONTINUE = RULES.actions.continue;
const PAUSE = RULES.actions.pause;
const EVENT_STREAM = RULES.event_stream_media_type.toLowerCase();
const LOCAL_REPLY_HEADERS = RULES.local_reply_required_headers.map((h) => h.toLowerCase());
const FOREIGN = new Set(RULES.foreign_functions);
const READ_BYTES = RULES.response_read_bytes;

class RuleError extends Error {
  constructor(check, detail) {
    const row = CHECKS.get(check);
    if (!row) throw new Error(`host.mjs reports check ${check}, which internal/hostemu/rules.json does not list`);
    super(`${row.rule}: ${detail}`);
    this.rule = row.rule;
    this.check = check;
    this.detail = detail;
  }
}

// VMDead: the VM trapped (any exception out of a call into the guest); this call and every later one fail.
class VMDead extends Error {}

// ProcExit is thrown by proc_exit: the Go runtime exits on an unrecovered panic or a fatal error.
class ProcExit extends Error {
  constructor(code) {
    super(`proc_exit(${code})`);
    this.code = code;
  }
}

// ---- proxy-wasm and WASI constants -------------------------------------------------------------------------

const OK = 0, NOT_FOUND = 1, BAD_ARGUMENT = 2, UNIMPLEMENTED = 12;
const MAP_REQUEST_HEADERS = 0, MAP_REQUEST_TRAILERS = 1, MAP_RESPONSE_HEADERS = 2, MAP_RESPONSE_TRAILERS = 3;
const BUFFER_REQUEST_BODY = 0, BUFFER_RESPONSE_BODY = 1, BUFFER_VM_CONFIGURATION = 6, BUFFER_PLUGIN_CONFIGURATION = 7;

// Shared data: one map for every VM of this process (every worker of one Envoy), as proxy-wasm-cpp-host's
// src/shared_data.cc keeps it: one cas counter for every key, bumped on each write; a write with cas 0, or to
// a missing key, is unconditional; any other cas must be the key's current one (docs/envoy-host.md section 9).
const SHARED = new Map();
const MAP_HTTP_CALL_RESPONSE_HEADERS = 6, BUFFER_HTTP_CALL_RESPONSE_BODY = 4;
// An HTTP callout's answer is buffered whole, up to Envoy's http.async_response_buffer_limit (32 MiB by
// default); over it the callback gets no headers and no body, as on a reset.
const CALLOUT_BUFFER_LIMIT = 32 << 20;
let sharedCas = 0;
const CAS_MISMATCH = 8;
const ESUCCESS = 0, EBADF = 8, ENOSYS = 52;
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'critical'];
const MAX_LOGS = 1000; // per level and VM: a long benchmark must not grow the host

const EMPTY = Buffer.alloc(0);

// ---- header maps -------------------------------------------------------------------------------------------

const lowerPairs = (pairs) => (pairs || []).map(([k, v]) => [k.toLowerCase(), v]);
const clonePairs = (pairs) => pairs.map(([k, v]) => [k, v]);

function snapshot(pairs) {
  const m = new Map();
  for (const [k, v] of pairs) m.set(k.toLowerCase(), v);
  return m;
}

function sameHeaders(a, b) {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

function lookup(pairs, name) {
  name = name.toLowerCase();
  for (const [k, v] of pairs) if (k.toLowerCase() === name) return v;
  return '';
}

function isEventStream(contentType) {
  const media = contentType.split(';', 1)[0].trim().toLowerCase();
  return media === EVENT_STREAM;
}

// serializeMap is the proxy-wasm map encoding: count, (key size, value size) pairs, then each key and value
// with a NUL after it. Strings are latin1: one char per byte.
function serializeMap(pairs) {
  let size = 4;
  for (const [k, v] of pairs) size += 8 + k.length + v.length + 2;
  const buf = Buffer.alloc(size);
  buf.writeUInt32LE(pairs.length, 0);
  let p = 4;
  for (const [k, v] of pairs) {
    buf.writeUInt32LE(k.length, p);
    buf.writeUInt32LE(v.length, p + 4);
    p += 8;
  }
  for (const [k, v] of pairs) {
    p += buf.write(k, p, 'latin1') + 1;
    p += buf.write(v, p, 'latin1') + 1;
  }
  return buf;
}

function deserializeMap(buf) {
  if (buf.length < 4) return [];
  const n = buf.readUInt32LE(0);
  const out = [];
  let s = 4, d = 4 + 8 * n;
  for (let i = 0; i < n; i++) {
    const ks = buf.readUInt32LE(s), vs = buf.readUInt32LE(s + 4);
    s += 8;
    const k = buf.toString('latin1', d, d + ks);
    d += ks + 1;
    const v = buf.toString('latin1', d, d + vs);
    d += vs + 1;
    out.push([k.toLowerCase(), v]);
  }
  return out;
}

// ---- one VM: a module instance with its host state ---------------------------------------------------------

let nextVM = 1;

class VM {
  constructor(module, env) {
    this.id = nextVM++;
    this.env = env || {};
    this.dead = null; // the message of the trap that killed it
    this.active = 0; // the context whose callback runs (proxy_set_effective_context may change it)
    this.nextContext = 1;
    this.nextCallout = 1;
    this.roots = new Map(); // root context id -> {config, tickPeriod}
    this.streams = new Map(); // http context id -> stream state
    this.logs = Object.fromEntries(LOG_LEVELS.map((l) => [l, []]));
    this.logTotal = Object.fromEntries(LOG_LEVELS.map((l) => [l, 0])); // lines ever logged, per level
    this.routeClears = 0;
    this.metrics = new Map(); // id -> {name, type, value}
    this.metricIds = new Map(); // name -> id
    this.stderr = '';
    this.sleeper = new Int32Array(new SharedArrayBuffer(4));
    this.polls = 0; // poll_oneoff calls
    this.pollWaitNs = 0; // and the time the guest asked to sleep in them
    const missing = [];
    const imports = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.kind !== 'function') continue;
      const table = imp.module === 'env' ? this.proxyImports() : imp.module === 'wasi_snapshot_preview1' ? this.wasiImports() : null;
      let f = table && table[imp.name];
      if (!f && imp.module === 'wasi_snapshot_preview1') f = () => ENOSYS; // as hosts without the call answer
      if (!f) {
        missing.push(`${imp.module}.${imp.name}`);
        continue;
      }
      (imports[imp.module] ||= {})[imp.name] = f;
    }
    if (missing.length) throw new Error(`the module imports host functions this host does not provide: ${missing.join(', ')}`);
    this.instance = new WebAssembly.Instance(module, imports);
    this.exports = this.instance.exports;
    this.memory = this.exports.memory;
    this.view();
    const init = this.exports._initialize;
    if (init) this.call(() => init());
    if (this.exports.proxy_on_vm_start) this.call(() => this.exports.proxy_on_vm_start(0, 0));
  }

  // view refreshes the memory views: growing the memory replaces its ArrayBuffer.
  view() {
    if (this.u8 && this.u8.buffer === this.memory.buffer) return;
    this.u8 = Buffer.from(this.memory.buffer);
    this.dv = new DataView(this.memory.buffer);
  }

  memoryBytes() {
    return this.memory.buffer.byteLength;
  }

  bytes(ptr, size) {
    this.view();
    return Buffer.from(this.u8.subarray(ptr, ptr + size)); // a copy: the guest may reuse its memory
  }

  latin1(ptr, size) {
    this.view();
    return this.u8.toString('latin1', ptr, ptr + size);
  }

  u32(ptr, value) {
    this.view();
    this.dv.setUint32(ptr, value, true);
  }

  // give copies data into memory the guest allocates (proxy_on_memory_allocate) and stores its address and size
  // at ptrPtr and sizePtr, as proxy-wasm hosts return values.
  give(data, ptrPtr, sizePtr) {
    if (data.length === 0) {
      this.u32(ptrPtr, 0);
      this.u32(sizePtr, 0);
      return OK;
    }
    const p = this.exports.proxy_on_memory_allocate(data.length);
    this.view();
    this.u8.set(data, p);
    this.dv.setUint32(ptrPtr, p, true);
    this.dv.setUint32(sizePtr, data.length, true);
    return OK;
  }

  // call runs f (a call into the guest). Any exception is a trap: the VM is dead, and this call and every later
  // one throw VMDead without touching the guest again.
  call(f) {
    if (this.dead) throw new VMDead(`${RULES.trap} (an earlier call trapped; this one never reached the VM): ${this.dead}`);
    try {
      return f();
    } catch (e) {
      const tail = this.stderr.trim().split('\n').slice(-3).join(' | ');
      this.dead = `${e instanceof ProcExit ? e.message : String(e && e.stack ? e.stack.split('\n')[0] : e)}${tail ? ` (guest stderr: ${tail})` : ''}`;
      throw new VMDead(`${RULES.trap}: ${this.dead}`);
    }
  }

  // callback runs a guest export as context id (the active context for its host calls).
  callback(id, name, ...args) {
    return this.call(() => {
      this.active = id;
      return this.exports[name](...args);
    });
  }

  stream() {
    return this.streams.get(this.active);
  }

  log(level, text) {
    const name = LOG_LEVELS[level];
    if (!name) return;
    const list = this.logs[name];
    if (list.length >= MAX_LOGS) list.shift();
    list.push(text);
    this.logTotal[name]++;
  }

  // ---- plugins (root contexts) ----

  startPlugin(config) {
    const id = this.nextContext++;
    this.roots.set(id, { config: Buffer.from(config, 'utf8'), tickPeriod: 0 });
    this.callback(id, 'proxy_on_context_create', id, 0);
    const ok = this.callback(id, 'proxy_on_configure', id, Buffer.byteLength(config));
    if (!ok) {
      this.stopPlugin(id);
      return null;
    }
    return id;
  }

  stopPlugin(id) {
    if (!this.roots.has(id)) return;
    if (!this.dead) {
      this.callback(id, 'proxy_on_done', id);
      this.callback(id, 'proxy_on_delete', id);
    }
    this.roots.delete(id);
  }

  // ---- host functions: proxy-wasm 0.2.1 (module "env") ----

  proxyImports() {
    const vm = this;
    const headerMap = (s, type) => {
      switch (type) {
        case MAP_REQUEST_HEADERS: return 'reqHeaders';
        case MAP_REQUEST_TRAILERS: return 'reqTrailers';
        case MAP_RESPONSE_HEADERS: return 'respHeaders';
        case MAP_RESPONSE_TRAILERS: return 'respTrailers';
      }
      return null;
    };
    const bodyOf = (type) => (type === BUFFER_REQUEST_BODY ? 'reqBody' : type === BUFFER_RESPONSE_BODY ? 'respBody' : null);
    return {
      proxy_log(level, ptr, size) {
        vm.log(level, vm.bytes(ptr, size).toString('utf8'));
        return OK;
      },
      proxy_get_header_map_value(type, keyPtr, keySize, retPtr, retSize) {
        const s = vm.stream(), field = headerMap(s, type);
        if (!s || !field) return BAD_ARGUMENT;
        // Envoy's Context::decodeHeaders drops its reference to the request header map once the headers callback
        // returned Continue; getHeaderMapValue then answers BadArgument (the map is not available).
        if (field === 'reqHeaders' && s.reqHeadersDropped) return BAD_ARGUMENT;
        const key = vm.latin1(keyPtr, keySize).toLowerCase();
        for (const [k, v] of s[field]) {
          if (k === key) {
            const value = v.trim();
            if (value === '') return NOT_FOUND; // Envoy answers an empty value as absent
            return vm.give(Buffer.from(value, 'latin1'), retPtr, retSize);
          }
        }
        return NOT_FOUND;
      },
      proxy_get_header_map_pairs(type, retPtr, retSize) {
        if (type === MAP_HTTP_CALL_RESPONSE_HEADERS) {
          if (!vm.calloutResponse) return NOT_FOUND; // only inside the callout's callback
          return vm.give(serializeMap(vm.calloutResponse.headers), retPtr, retSize);
        }
        const s = vm.stream(), field = headerMap(s, type);
        if (!s || !field) return BAD_ARGUMENT;
        if (field === 'reqHeaders' && s.reqHeadersDropped) return vm.give(serializeMap([]), retPtr, retSize); // Envoy: no map, no pairs
        return vm.give(serializeMap(s[field]), retPtr, retSize);
      },
      proxy_set_header_map_pairs(type, ptr, size) {
        const s = vm.stream(), field = headerMap(s, type);
        if (!s || !field) return BAD_ARGUMENT;
        s[field] = deserializeMap(vm.bytes(ptr, size)); // names lower-cased, as Envoy stores them
        return OK;
      },
      proxy_add_header_map_value(type, keyPtr, keySize, valuePtr, valueSize) {
        const s = vm.stream(), field = headerMap(s, type);
        if (!s || !field) return BAD_ARGUMENT;
        const key = vm.latin1(keyPtr, keySize).toLowerCase(), value = vm.latin1(valuePtr, valueSize);
        const h = s[field].find(([k]) => k === key);
        if (h) h[1] += value;
        else s[field].push([key, value]);
        return OK;
      },
      proxy_replace_header_map_value(type, keyPtr, keySize, valuePtr, valueSize) {
        const s = vm.stream(), field = headerMap(s, type);
        if (!s || !field) return BAD_ARGUMENT;
        const key = vm.latin1(keyPtr, keySize).toLowerCase(), value = vm.latin1(valuePtr, valueSize);
        const h = s[field].find(([k]) => k === key);
        if (h) h[1] = value;
        else s[field].push([key, value]);
        return OK;
      },
      proxy_remove_header_map_value(type, keyPtr, keySize) {
        const s = vm.stream(), field = headerMap(s, type);
        if (!s || !field) return BAD_ARGUMENT;
        const key = vm.latin1(keyPtr, keySize).toLowerCase();
        s[field] = s[field].filter(([k]) => k !== key);
        return OK;
      },
      proxy_get_buffer_bytes(type, start, maxSize, retPtr, retSize) {
        let buf;
        if (type === BUFFER_PLUGIN_CONFIGURATION) {
          const root = vm.roots.get(vm.active);
          buf = root ? root.config : EMPTY;
        } else if (type === BUFFER_VM_CONFIGURATION) {
          buf = EMPTY;
        } else if (type === BUFFER_HTTP_CALL_RESPONSE_BODY) {
          if (!vm.calloutResponse) return NOT_FOUND;
          buf = vm.calloutResponse.body;
        } else {
          const s = vm.stream(), field = bodyOf(type);
          if (!s || !field) return BAD_ARGUMENT;
          buf = s[field];
        }
        if (buf.length === 0) return NOT_FOUND;
        if (start >= buf.length) return BAD_ARGUMENT;
        const end = Math.min(buf.length, start + maxSize);
        return vm.give(buf.subarray(start, end), retPtr, retSize);
      },
      proxy_set_buffer_bytes(type, start, maxSize, ptr, size) {
        const s = vm.stream(), field = bodyOf(type);
        if (!s || !field) return BAD_ARGUMENT;
        // In a trailers callback whose body Envoy no longer holds (the last body callback continued), Envoy's
        // Context::getBuffer wraps no buffer and proxy-wasm-cpp-host's BufferBase::copyFrom answers
        // BadArgument: nothing changes. What the call would have made is kept, so that the exchange reports
        // the filter counting on it (docs/envoy-host.md section 4).
        const refused = s.unheld === field;
        const data = vm.bytes(ptr, size), cur = refused ? (s.refused ?? s[field]) : s[field];
        let next;
        if (start === 0 && maxSize === 0) next = Buffer.concat([data, cur]); // prepend
        else if (start === 0 && maxSize >= cur.length) next = data; // replace
        else if (start >= cur.length) next = Buffer.concat([cur, data]); // append
        else return BAD_ARGUMENT;
        if (refused) {
          s.refused = next;
          return BAD_ARGUMENT;
        }
        s[field] = next;
        return OK;
      },
      proxy_send_local_response(status, detailsPtr, detailsSize, bodyPtr, bodySize, headersPtr, headersSize, grpcStatus) {
        const s = vm.stream();
        if (!s) return BAD_ARGUMENT;
        s.local = {
          status,
          details: vm.latin1(detailsPtr, detailsSize),
          body: vm.bytes(bodyPtr, bodySize),
          headers: deserializeMap(vm.bytes(headersPtr, headersSize)),
          grpcStatus,
        };
        return OK;
      },
      proxy_call_foreign_function(namePtr, nameSize, paramPtr, paramSize, retPtr, retSize) {
        const name = vm.latin1(namePtr, nameSize);
        if (!FOREIGN.has(name)) return NOT_FOUND;
        if (name === 'clear_route_cache') vm.routeClears++;
        return vm.give(EMPTY, retPtr, retSize);
      },
      proxy_set_tick_period_milliseconds(ms) {
        const root = vm.roots.get(vm.active);
        if (!root) return BAD_ARGUMENT;
        root.tickPeriod = ms;
        return OK;
      },
      proxy_set_effective_context(id) {
        if (!vm.streams.has(id) && !vm.roots.has(id)) return BAD_ARGUMENT;
        vm.active = id;
        return OK;
      },
      proxy_define_metric(type, namePtr, nameSize, retId) {
        const name = vm.bytes(namePtr, nameSize).toString('utf8'); // a copy, as Envoy keeps it
        let id = vm.metricIds.get(name);
        if (id === undefined) {
          id = vm.metricIds.size;
          vm.metricIds.set(name, id);
          vm.metrics.set(id, { name, type, value: 0n });
        }
        vm.u32(retId, id);
        return OK;
      },
      proxy_increment_metric(id, offset) {
        const m = vm.metrics.get(id);
        if (!m) return BAD_ARGUMENT;
        m.value += BigInt(offset);
        return OK;
      },
      proxy_record_metric(id, value) {
        const m = vm.metrics.get(id);
        if (!m) return BAD_ARGUMENT;
        m.value = BigInt.asUintN(64, BigInt(value));
        return OK;
      },
      proxy_get_metric(id, retPtr) {
        const m = vm.metrics.get(id);
        if (!m) return BAD_ARGUMENT;
        vm.view();
        vm.dv.setBigUint64(retPtr, BigInt.asUintN(64, m.value), true);
        return OK;
      },
      proxy_get_property() {
        return NOT_FOUND; // the filter reads no properties
      },
      proxy_set_property() {
        return OK;
      },
      proxy_get_shared_data(keyPtr, keySize, retPtr, retSize, casPtr) {
        const e = SHARED.get(vm.latin1(keyPtr, keySize));
        if (!e) return NOT_FOUND;
        vm.u32(casPtr, e.cas);
        return vm.give(e.value, retPtr, retSize);
      },
      proxy_set_shared_data(keyPtr, keySize, valuePtr, valueSize, cas) {
        const key = vm.latin1(keyPtr, keySize);
        const e = SHARED.get(key);
        if (e && cas !== 0 && cas !== e.cas) return CAS_MISMATCH;
        sharedCas = (sharedCas + 1) >>> 0 || 1;
        SHARED.set(key, { value: vm.bytes(valuePtr, valueSize), cas: sharedCas });
        return OK;
      },
      proxy_http_call(clusterPtr, clusterSize, headersPtr, headersSize, bodyPtr, bodySize, trailersPtr, trailersSize, timeout, tokenPtr) {
        // Recorded on the stream that made it (the exchange delivers its answer), or on the root context that
        // made it from its tick (op tick delivers those). cpp-host's http_call gives every callout to the root
        // context, so a stream that ends first does not cancel its callouts.
        const s = vm.stream() || vm.roots.get(vm.active);
        if (!s) return BAD_ARGUMENT;
        const headers = deserializeMap(vm.bytes(headersPtr, headersSize));
        for (const name of [':method', ':path', ':authority']) {
          if (!headers.some(([k, v]) => k === name && v !== '')) return BAD_ARGUMENT;
        }
        const cluster = vm.latin1(clusterPtr, clusterSize);
        // Envoy's Context::httpCall answers BadArgument at once when the cluster manager has no such cluster.
        if (s.clusters && !s.clusters.includes(cluster)) return BAD_ARGUMENT;
        const token = vm.nextCallout++;
        (s.callouts ||= []).push({ token, cluster, headers, body: vm.bytes(bodyPtr, bodySize), timeout });
        vm.u32(tokenPtr, token);
        return OK;
      },
      proxy_continue_stream(streamType) {
        // From a callout's callback (the SDK made the caller's stream the effective context): the stream that
        // paused goes on (Envoy's continueDecoding / continueEncoding). Only resuming a request is modelled.
        const s = vm.stream();
        if (!s || streamType !== 0) return BAD_ARGUMENT;
        s.continued = true;
        return OK;
      },
      proxy_close_stream() {
        return UNIMPLEMENTED;
      },
      proxy_done() {
        return OK;
      },
    };
  }

  // ---- host functions: WASI preview 1, the calls a Go wasip1 reactor makes ----

  wasiImports() {
    const vm = this;
    const envStrings = () => Object.entries(vm.env).map(([k, v]) => Buffer.from(`${k}=${v}\0`, 'utf8'));
    return {
      args_sizes_get(argcPtr, sizePtr) {
        vm.u32(argcPtr, 0);
        vm.u32(sizePtr, 0);
        return ESUCCESS;
      },
      args_get() {
        return ESUCCESS;
      },
      environ_sizes_get(countPtr, sizePtr) {
        const env = envStrings();
        vm.u32(countPtr, env.length);
        vm.u32(sizePtr, env.reduce((n, b) => n + b.length, 0));
        return ESUCCESS;
      },
      environ_get(ptrs, buf) {
        let p = buf;
        envStrings().forEach((b, i) => {
          vm.u32(ptrs + 4 * i, p);
          vm.view();
          vm.u8.set(b, p);
          p += b.length;
        });
        return ESUCCESS;
      },
      clock_time_get(id, _precision, retPtr) {
        vm.view();
        vm.dv.setBigUint64(retPtr, now(id), true);
        return ESUCCESS;
      },
      fd_write(fd, iovs, iovsLen, nwrittenPtr) {
        vm.view();
        let n = 0;
        const parts = [];
        for (let i = 0; i < iovsLen; i++) {
          const p = vm.dv.getUint32(iovs + 8 * i, true), len = vm.dv.getUint32(iovs + 8 * i + 4, true);
          parts.push(vm.bytes(p, len));
          n += len;
        }
        if (fd !== 1 && fd !== 2) return EBADF;
        const text = Buffer.concat(parts).toString('utf8');
        vm.stderr = (vm.stderr + text).slice(-8192);
        process.stderr.write(text); // never stdout: that is the protocol
        vm.u32(nwrittenPtr, n);
        return ESUCCESS;
      },
      random_get(ptr, len) {
        vm.view();
        crypto.randomFillSync(vm.u8, ptr, len);
        return ESUCCESS;
      },
      poll_oneoff(inPtr, outPtr, nsubs, neventsPtr) {
        // Clock subscriptions sleep until the earliest deadline (at most 1 s); every subscription is reported.
        vm.view();
        let wait = Infinity;
        for (let i = 0; i < nsubs; i++) {
          const s = inPtr + 48 * i;
          if (vm.dv.getUint8(s + 8) !== 0) continue;
          const clock = vm.dv.getUint32(s + 16, true), timeout = vm.dv.getBigUint64(s + 24, true);
          const abs = (vm.dv.getUint16(s + 40, true) & 1) !== 0;
          const ns = abs ? timeout - now(clock) : timeout;
          wait = Math.min(wait, Number(ns > 0n ? ns : 0n) / 1e6);
        }
        vm.polls++;
        if (wait > 0 && wait !== Infinity) {
          vm.pollWaitNs += Math.min(wait, 1000) * 1e6;
          Atomics.wait(vm.sleeper, 0, 0, Math.min(wait, 1000));
        }
        for (let i = 0; i < nsubs; i++) {
          const s = inPtr + 48 * i, e = outPtr + 32 * i;
          vm.dv.setBigUint64(e, vm.dv.getBigUint64(s, true), true);
          vm.dv.setUint16(e + 8, 0, true);
          vm.dv.setUint8(e + 10, vm.dv.getUint8(s + 8));
          vm.dv.setBigUint64(e + 16, 0n, true);
          vm.dv.setUint16(e + 24, 0, true);
        }
        vm.u32(neventsPtr, nsubs);
        return ESUCCESS;
      },
      proc_exit(code) {
        throw new ProcExit(code);
      },
      sched_yield() {
        return ESUCCESS;
      },
      fd_close() {
        return EBADF;
      },
      fd_fdstat_get(fd, ptr) {
        if (fd > 2) return EBADF;
        vm.view();
        vm.u8.fill(0, ptr, ptr + 24);
        vm.dv.setUint8(ptr, 2); // character device
        return ESUCCESS;
      },
      fd_fdstat_set_flags(fd) {
        return fd > 2 ? EBADF : ESUCCESS;
      },
      fd_prestat_get() {
        return EBADF; // no preopened directories
      },
      fd_prestat_dir_name() {
        return EBADF;
      },
    };
  }
}

const realtimeBase = BigInt(Date.now()) * 1000000n - process.hrtime.bigint();

function now(clock) {
  const mono = process.hrtime.bigint();
  return clock === 0 ? realtimeBase + mono : mono;
}

// ---- one exchange, as hostemu.Exchange plays it ------------------------------------------------------------

class Exchange {
  constructor(vm, root) {
    this.vm = vm;
    this.local = null; // the filter's own reply
    this.upstream = null; // the request as the upstream receives it
    this.requestHeaders = null; // snapshot once released
    this.responseHeaders = null;
    this.stream = false;
    this.bodyHeld = false;
    this.done = false;
    this.withhold = false; // hostemu's WithholdBodies: a paused headers callback gets no body callbacks
    this.withheld = false;
    this.client = { status: 0, headers: null, body: [], trailers: null };
    this.root = root;
    this.calloutAnswers = []; // the answers the exchange gives the filter's callouts, in order
    this.calloutsMade = [];
    this.calloutsSeen = 0;
    this.clusters = null; // the clusters Envoy has (null: any)
    this.clientGone = false;
    this.id = vm.nextContext++;
    // The stream's state, as the host functions see it. Body Buffers are never written in place (each change
    // makes a new one), so they are handed on without copies.
    this.s = {
      reqHeaders: [], respHeaders: [], reqTrailers: [], respTrailers: [],
      reqBody: EMPTY, respBody: EMPTY, reqBuffered: EMPTY, respBuffered: EMPTY, local: null,
      // unheld names the body ('reqBody', 'respBody') a running trailers callback cannot change, Envoy holding
      // none of it; refused is what the refused changes would have made of it (null: none was tried).
      unheld: null, refused: null,
    };
    vm.streams.set(this.id, this.s);
    try {
      vm.callback(this.id, 'proxy_on_context_create', this.id, root);
    } catch (e) {
      this.done = true;
      vm.streams.delete(this.id);
      throw e;
    }
  }

  // sendRequest: hostemu's Exchange.sendRequest.
  sendRequest(headers, chunks, trailers) {
    const vm = this.vm, s = this.s, id = this.id;
    const hasTrailers = trailers != null;
    s.reqHeaders = lowerPairs(headers);
    let action = vm.callback(id, 'proxy_on_request_headers', id, headers.length, chunks.length === 0 && !hasTrailers ? 1 : 0);
    if (this.localReply(action, 'OnHttpRequestHeaders')) return;
    if (action === CONTINUE) {
      this.requestHeaders = snapshot(s.reqHeaders);
      // Only a Continue from the headers callback drops the map: paused headers stay readable to the end.
      s.reqHeadersDropped = true;
    } else if (this.withhold) {
      // An Envoy without allow_on_headers_stop_iteration: nothing more is delivered; only a local reply from
      // a tick can end the request (op tick).
      this.withheld = true;
      return;
    }
    const sent = [];
    let held = false;
    for (let i = 0; i < chunks.length; i++) {
      const last = i === chunks.length - 1 && !hasTrailers;
      s.reqBody = s.reqBuffered.length ? Buffer.concat([s.reqBuffered, chunks[i]]) : chunks[i];
      action = vm.callback(id, 'proxy_on_request_body', id, s.reqBody.length, last ? 1 : 0);
      s.reqBuffered = action === PAUSE ? s.reqBody : EMPTY;
      this.checkFrozenRequest('OnHttpRequestBody');
      if (this.localReply(action, 'OnHttpRequestBody')) return;
      held = action !== CONTINUE;
      if (held && last) {
        // Only a callout under way (a budget check) can resume or answer a request paused at its end.
        const how = this.awaitRequestCallouts('OnHttpRequestBody');
        if (how !== 'resumed') return;
        held = false;
      }
      if (!held) {
        sent.push(s.reqBody);
        if (!this.requestHeaders) this.requestHeaders = snapshot(s.reqHeaders);
      }
    }
    let upTrailers = null;
    if (hasTrailers) {
      const before = s.reqBody;
      s.reqTrailers = lowerPairs(trailers);
      const refused = this.trailersCallback(held ? null : 'reqBody', 'proxy_on_request_trailers', trailers.length);
      action = refused.action;
      this.checkFrozenRequest('OnHttpRequestTrailers');
      if (this.localReply(action, 'OnHttpRequestTrailers')) return;
      if (action !== CONTINUE && this.awaitRequestCallouts('OnHttpRequestTrailers') !== 'resumed') return;
      if (held) sent.push(s.reqBody);
      else if (refused.body && !before.equals(refused.body)) {
        throw new RuleError('request-trailers-body-edit-not-held',
          'OnHttpRequestTrailers changed the request body, but Envoy holds none: every chunk already went upstream');
      }
      if (!this.requestHeaders) this.requestHeaders = snapshot(s.reqHeaders);
      upTrailers = clonePairs(s.reqTrailers);
    }
    if (!this.requestHeaders) throw new RuleError('request-headers-never-released', 'the request headers were paused and never released');
    const body = sent.length === 1 ? sent[0] : Buffer.concat(sent);
    const cl = this.requestHeaders.get('content-length');
    if (cl !== undefined && cl !== String(body.length)) {
      throw new RuleError('request-content-length-mismatch', `content-length ${cl} but the upstream body has ${body.length} bytes`);
    }
    this.upstream = { headers: clonePairs(s.reqHeaders), body, trailers: upTrailers };
  }

  // localReply: hostemu's Exchange.localReply (a reply sent from a request callback).
  localReply(action, where) {
    const vm = this.vm, s = this.s, id = this.id;
    const reply = s.local;
    if (!reply) return false;
    this.local = { status: reply.status, headers: clonePairs(reply.headers), body: reply.body };
    if (action !== PAUSE) {
      throw new RuleError('local-reply-not-paused', `${where} sent a local reply but returned ${action} instead of Pause`);
    }
    for (const h of LOCAL_REPLY_HEADERS) {
      if (lookup(reply.headers, h) === '') throw new RuleError('local-reply-without-content-type', `local reply without a ${h}`);
    }
    const head = [[':status', String(reply.status)], ...clonePairs(reply.headers)];
    s.respHeaders = lowerPairs(head);
    vm.callback(id, 'proxy_on_response_headers', id, head.length, reply.body.length === 0 ? 1 : 0);
    if (!sameHeaders(snapshot(s.respHeaders), snapshot(head))) {
      throw new RuleError('local-reply-headers-edited', "the filter edited its own local reply's headers");
    }
    if (reply.body.length > 0) {
      s.respBody = s.respBuffered.length ? Buffer.concat([s.respBuffered, reply.body]) : reply.body;
      const a = vm.callback(id, 'proxy_on_response_body', id, s.respBody.length, 1);
      s.respBuffered = a === PAUSE ? s.respBody : EMPTY;
      if (!s.respBody.equals(reply.body)) {
        throw new RuleError('local-reply-body-translated-again', 'the filter translated its own local reply a second time');
      }
    }
    return true;
  }

  checkFrozenRequest(where) {
    if (this.requestHeaders && !sameHeaders(this.requestHeaders, snapshot(this.s.reqHeaders))) {
      throw new RuleError('request-headers-edited-after-release', `request headers edited in ${where} after they went upstream`);
    }
  }

  checkFrozenResponse(where) {
    if (this.responseHeaders && !sameHeaders(this.responseHeaders, snapshot(this.s.respHeaders))) {
      throw new RuleError('response-headers-edited-after-release', `response headers edited in ${where} after they went to the client`);
    }
  }

  // relayResponse: hostemu's Exchange.RelayResponse. chunks null: a body-less response; trailers null: the
  // last body callback carries end_of_stream. As hostemu reads the upstream's body, each chunk is one
  // callback (cut at the table's read size), and end_of_stream comes in a last, empty callback, or, with
  // endWithLast, with the last chunk (as when hostemu's reader returns data with io.EOF, and as Envoy often
  // delivers it).
  relayResponse(status, headers, chunks, trailers, endWithLast) {
    const vm = this.vm, s = this.s, id = this.id;
    const head = [[':status', String(status)], ...headers];
    this.stream = isEventStream(lookup(headers, 'content-type'));
    s.respHeaders = lowerPairs(head);
    const action = vm.callback(id, 'proxy_on_response_headers', id, head.length, chunks == null ? 1 : 0);
    if (this.responseLocalReply(action, 'OnHttpResponseHeaders')) return;
    if (action === CONTINUE) this.releaseHeaders();
    else if (this.stream) throw new RuleError('event-stream-headers-paused', 'response headers of an event stream paused');
    if (this.resolveCallouts()) return;
    if (chunks == null) {
      if (!this.responseHeaders) throw new RuleError('response-headers-paused-without-body', 'response headers paused on a body-less response');
      return;
    }
    const endsHere = endWithLast && trailers == null;
    for (let c = 0; c < chunks.length; c++) {
      const chunk = chunks[c];
      for (let off = 0; off < chunk.length; off += READ_BYTES) {
        const last = endsHere && c === chunks.length - 1 && off + READ_BYTES >= chunk.length;
        if (this.bodyCallback(chunk.subarray(off, off + READ_BYTES), last)) return;
        if (this.resolveCallouts()) return;
        if (last) break;
      }
    }
    if (endsHere && chunks.length && chunks[chunks.length - 1].length) {
      // ended with the last chunk
    } else if (trailers == null) {
      if (this.bodyCallback(EMPTY, true)) return;
    } else {
      const sent = s.respBody;
      s.respTrailers = lowerPairs(trailers);
      const refused = this.trailersCallback(this.bodyHeld ? null : 'respBody', 'proxy_on_response_trailers', trailers.length);
      if (this.resolveCallouts()) return;
      if (!this.responseHeaders) this.releaseHeaders();
      else this.checkFrozenResponse('OnHttpResponseTrailers');
      if (refused.body && refused.body.length < sent.length) {
        throw new RuleError('response-trailers-shortened-sent-body', 'OnHttpResponseTrailers shortened response bytes that already went to the client');
      }
      if (refused.body && !refused.body.equals(sent)) {
        throw new RuleError('response-trailers-body-edit-not-held',
          'OnHttpResponseTrailers changed the response body, but Envoy holds none (the last body callback continued): ' +
          'Envoy answered BadArgument, and the client never gets the bytes');
      }
      if (this.bodyHeld && s.respBody.length) this.client.body.push(s.respBody);
      this.client.trailers = clonePairs(s.respTrailers);
    }
    if (!this.responseHeaders) throw new RuleError('response-headers-never-released', 'the response headers were paused and never released');
  }

  // trailersCallback runs a trailers callback; unheld names the body Envoy no longer holds (null: the last body
  // callback paused, and the buffered body may change). It returns the callback's action and what the host
  // refused to make of that body (null: no change was tried).
  trailersCallback(unheld, callback, count) {
    const s = this.s;
    s.unheld = unheld;
    s.refused = null;
    try {
      const action = this.vm.callback(this.id, callback, this.id, count);
      return { action, body: s.refused };
    } finally {
      s.unheld = null;
      s.refused = null;
    }
  }

  // bodyCallback: hostemu's Exchange.bodyCallback; true when the filter answered locally instead.
  bodyCallback(chunk, last) {
    const vm = this.vm, s = this.s, id = this.id;
    s.respBody = s.respBuffered.length ? Buffer.concat([s.respBuffered, chunk]) : chunk;
    const action = vm.callback(id, 'proxy_on_response_body', id, s.respBody.length, last ? 1 : 0);
    s.respBuffered = action === PAUSE ? s.respBody : EMPTY;
    if (this.responseLocalReply(action, 'OnHttpResponseBody')) return true;
    this.checkFrozenResponse('OnHttpResponseBody');
    if (this.stream && action !== CONTINUE) throw new RuleError('event-stream-body-paused', 'OnHttpResponseBody paused an event stream');
    this.bodyHeld = action !== CONTINUE;
    if (action === CONTINUE) {
      if (!this.responseHeaders) this.releaseHeaders();
      if (s.respBody.length) this.client.body.push(s.respBody); // never written in place: no copy needed
    } else if (last) {
      // With a callout under way the pause waits for its answer, which replaces the response (as in hostemu).
      if (s.callouts && s.callouts.length > this.calloutsSeen && this.resolveCallouts()) return true;
      throw new RuleError('response-body-paused-at-end-of-stream', 'OnHttpResponseBody paused at end_of_stream: the response would hang');
    }
    return false;
  }

  // responseLocalReply: hostemu's Exchange.responseLocalReply (a reply sent from a response callback).
  responseLocalReply(action, where) {
    const reply = this.s.local;
    if (!reply || this.local) return false;
    this.local = { status: reply.status, headers: clonePairs(reply.headers), body: reply.body };
    if (this.responseHeaders) {
      throw new RuleError('local-reply-after-response-headers', `${where} sent a local reply after the response headers went to the client`);
    }
    if (action !== PAUSE) {
      throw new RuleError('response-local-reply-not-paused', `${where} sent a local reply but returned ${action} instead of Pause`);
    }
    this.responseHeaders = snapshot(reply.headers);
    this.client.status = reply.status;
    this.client.headers = clonePairs(reply.headers);
    this.client.body = [reply.body];
    return true;
  }

  // awaitRequestCallouts delivers the answers of the callouts a request callback made before it paused at the
  // end of the request (a budget check): 'resumed' when a callback continued the request
  // (proxy_continue_stream), 'replied' when one answered it locally, 'gone' when the client left. With no
  // callout pending, or none of them resuming or answering, the request would hang: a RuleError.
  awaitRequestCallouts(where) {
    const vm = this.vm, s = this.s;
    const hang = () => where === 'OnHttpRequestTrailers'
      ? new RuleError('request-trailers-paused', 'OnHttpRequestTrailers paused and nothing resumes the request: it would hang')
      : new RuleError('request-body-paused-at-end-of-stream', 'OnHttpRequestBody paused at end_of_stream: the request would hang');
    if (!s.callouts || this.calloutsSeen >= s.callouts.length) throw hang();
    while (s.callouts && this.calloutsSeen < s.callouts.length) {
      const c = s.callouts[this.calloutsSeen++];
      this.calloutsMade.push({ cluster: c.cluster, headers: c.headers, body: c.body });
      const answer = this.calloutAnswers.shift();
      if (!answer) throw new Error(`the filter made a callout to ${c.cluster}, and the exchange lists no answer for it`);
      if (answer.client_gone) this.finish();
      deliverCallout(vm, this.root, c, answer);
      if (answer.client_gone) {
        this.clientGone = true;
        return 'gone';
      }
      if (this.localReply(PAUSE, "the callout's callback")) return 'replied';
      if (s.continued) {
        s.continued = false;
        return 'resumed';
      }
    }
    throw hang();
  }

  // resolveCallouts delivers the answers of the callouts the filter made (docs/envoy-host.md section 9), in
  // the order the exchange lists them, until none is pending. It reports whether the exchange ended: a local
  // reply from a callback (sent straight to the client: Envoy's encoder filters, this one included, do not see
  // a local reply made while the response headers are held), or the client gone (the stream is destroyed
  // first; the callout is not cancelled, so its callback still comes, and the filter must ignore it).
  resolveCallouts() {
    const vm = this.vm, s = this.s;
    while (s.callouts && this.calloutsSeen < s.callouts.length) {
      const c = s.callouts[this.calloutsSeen++];
      this.calloutsMade.push({ cluster: c.cluster, headers: c.headers, body: c.body });
      if (this.clusters && !this.clusters.includes(c.cluster)) {
        throw new Error(`envoy-host 9: callout to cluster ${JSON.stringify(c.cluster)}, which Envoy does not have: proxy_http_call answers BadArgument`);
      }
      const answer = this.calloutAnswers.shift();
      if (!answer) throw new Error(`the filter made a callout to ${c.cluster}, and the exchange lists no answer for it`);
      let headers = [], body = EMPTY;
      if (!answer.failed && answer.body.length <= CALLOUT_BUFFER_LIMIT) {
        headers = [[':status', String(answer.status)], ...lowerPairs(answer.headers)];
        body = answer.body;
      }
      if (answer.client_gone) this.finish();
      vm.calloutResponse = { headers, body };
      try {
        vm.callback(this.root, 'proxy_on_http_call_response', this.root, c.token, headers.length, body.length, 0);
      } finally {
        vm.calloutResponse = null;
      }
      if (answer.client_gone) {
        this.clientGone = true;
        return true;
      }
      const reply = s.local;
      if (reply && !this.local) {
        if (this.responseHeaders) {
          throw new RuleError('local-reply-after-response-headers', "the callout's callback sent a local reply after the response headers went to the client");
        }
        this.local = { status: reply.status, headers: clonePairs(reply.headers), body: reply.body };
        this.responseHeaders = snapshot(reply.headers);
        this.client.status = reply.status;
        this.client.headers = clonePairs(reply.headers);
        this.client.body = [reply.body];
        return true;
      }
    }
    return false;
  }

  releaseHeaders() {
    const current = this.s.respHeaders;
    this.responseHeaders = snapshot(current);
    this.client.status = parseInt(this.responseHeaders.get(':status'), 10) || 0;
    this.client.headers = current.filter(([k]) => k !== ':status').map(([k, v]) => [k, v]);
  }

  checkContentLength(bodyBytes) {
    const cl = this.responseHeaders && this.responseHeaders.get('content-length');
    if (cl !== undefined && cl !== null && cl !== String(bodyBytes)) {
      throw new RuleError('response-content-length-mismatch', `response content-length ${cl} but the client got ${bodyBytes} bytes`);
    }
  }

  // finish: proxy_on_log, then proxy_on_delete, and the host forgets the stream (as Envoy does).
  finish() {
    if (this.done) return;
    this.done = true;
    try {
      if (!this.vm.dead) {
        this.vm.callback(this.id, 'proxy_on_log', this.id);
        this.vm.callback(this.id, 'proxy_on_delete', this.id);
      }
    } finally {
      this.vm.streams.delete(this.id);
    }
  }
}

// play runs one exchange x (decoded) on plugin root of vm and returns its outcome. Like the plugin harness,
// it stops at the first broken rule; after a relayed answer it checks the response content-length. A
// request withheld (x.withhold_bodies) stays open in `pending` until a tick answers it or op finish ends it.
function play(vm, root, x) {
  const clears = vm.routeClears;
  const out = { local: null, upstream: null, client: null, rule: null, dead: null, route_clears: 0, withheld: 0 };
  let ex = null;
  try {
    ex = new Exchange(vm, root);
    ex.withhold = !!x.withhold_bodies;
    ex.calloutAnswers = x.callouts.slice();
    ex.clusters = x.clusters;
    ex.s.clusters = x.clusters; // proxy_http_call reads them
    let open = false;
    try {
      ex.sendRequest(x.request.headers, x.request.chunks, x.request.trailers);
      if (ex.withheld && !ex.local) {
        open = true;
        out.withheld = nextPending++;
        pending.set(out.withheld, { ex, root });
      } else if (!ex.local && ex.upstream && x.response) {
        ex.relayResponse(x.response.status, x.response.headers, x.response.chunks, x.response.trailers, x.response.end_with_last);
        ex.checkContentLength(ex.client.body.reduce((n, b) => n + b.length, 0));
      }
    } finally {
      fill(out, ex);
      if (!open) ex.finish();
    }
  } catch (e) {
    catchOutcome(out, e);
  }
  out.route_clears = vm.routeClears - clears;
  return out;
}

function catchOutcome(out, e) {
  if (e instanceof RuleError) out.rule = { rule: e.rule, check: e.check, detail: e.detail };
  else if (e instanceof VMDead) out.dead = e.message;
  else throw e;
}

// deliverCallout hands a callout's answer to the root context's proxy_on_http_call_response: no headers and no
// body for a failure or an answer over Envoy's buffer limit.
function deliverCallout(vm, root, c, answer) {
  let headers = [], body = EMPTY;
  if (!answer.failed && !answer.client_gone && answer.body.length <= CALLOUT_BUFFER_LIMIT) {
    headers = [[':status', String(answer.status)], ...lowerPairs(answer.headers)];
    body = answer.body;
  }
  vm.calloutResponse = { headers, body };
  try {
    vm.callback(root, 'proxy_on_http_call_response', root, c.token, headers.length, body.length, 0);
  } finally {
    vm.calloutResponse = null;
  }
}

// Withheld exchanges, by id: hostemu's Exchange.Withheld, answered by CheckTickReply after a tick.
const pending = new Map();
let nextPending = 1;

// tick runs the plugin's proxy_on_tick, then checks every withheld exchange of the plugin for a local reply
// the tick sent (hostemu's Host.Tick, then Exchange.CheckTickReply); those are finished and returned.
function tick(vm, root, answers, made) {
  const replies = [];
  vm.callback(root, 'proxy_on_tick', root);
  // The callouts the tick made, and those their callbacks made in turn, answered in the order given.
  const r = vm.roots.get(root);
  while (r.callouts && (r.calloutsSeen || 0) < r.callouts.length) {
    const c = r.callouts[r.calloutsSeen = (r.calloutsSeen || 0) + 1, r.calloutsSeen - 1];
    made.push({ cluster: c.cluster, headers: c.headers, body: c.body });
    const answer = answers.shift();
    if (!answer) throw new Error(`the plugin made a callout to ${c.cluster} from its tick, and the tick lists no answer for it`);
    deliverCallout(vm, root, c, answer);
  }
  for (const [id, p] of pending) {
    if (p.root !== root || p.ex.vm !== vm || !p.ex.s.local) continue;
    const out = { local: null, upstream: null, client: null, rule: null, dead: null, route_clears: 0, withheld: id };
    pending.delete(id);
    try {
      try {
        p.ex.localReply(PAUSE, 'OnTick');
      } finally {
        fill(out, p.ex);
        p.ex.finish();
      }
    } catch (e) {
      catchOutcome(out, e);
    }
    replies.push(out);
  }
  return replies;
}

function fill(out, ex) {
  out.local = ex.local;
  out.upstream = ex.upstream;
  out.callouts = ex.calloutsMade;
  out.client_gone = ex.clientGone;
  if (ex.client.headers || ex.client.body.length) out.client = ex.client;
}

// ---- the protocol -------------------------------------------------------------------------------------------

const modules = new Map(); // name -> WebAssembly.Module
const vms = new Map(); // id -> VM
const plugins = new Map(); // id -> {vm, root}
const refs = new Map(); // id -> decoded exchange
let nextPlugin = 1, nextRef = 1;

const decodeChunks = (list) => (list == null ? null : list.map((b) => Buffer.from(b, 'base64')));

function decodeExchange(x) {
  return {
    request: {
      headers: x.request.headers || [],
      chunks: decodeChunks(x.request.chunks) || [],
      trailers: x.request.trailers ?? null,
    },
    response: x.response
      ? {
        status: x.response.status,
        headers: x.response.headers || [],
        chunks: decodeChunks(x.response.chunks),
        trailers: x.response.trailers ?? null,
        end_with_last: !!x.response.end_with_last,
      }
      : null,
    withhold_bodies: !!x.withhold_bodies,
    callouts: (x.callouts || []).map((c) => ({ status: c.status, headers: c.headers || [], body: Buffer.from(c.body || '', 'base64'), failed: !!c.failed, client_gone: !!c.client_gone })),
    clusters: x.clusters ?? null,
  };
}

const b64 = (buf) => buf.toString('base64');

function encodeCallout(c) {
  return { cluster: c.cluster, headers: c.headers, body: b64(c.body) };
}

function encodeOutcome(o) {
  const msg = (m) => m && { status: m.status, headers: m.headers, body: b64(Array.isArray(m.body) ? Buffer.concat(m.body) : m.body), trailers: m.trailers ?? null };
  return {
    local: msg(o.local),
    upstream: o.upstream && { headers: o.upstream.headers, body: b64(o.upstream.body), trailers: o.upstream.trailers },
    client: msg(o.client),
    rule: o.rule,
    dead: o.dead,
    route_clears: o.route_clears,
    withheld: o.withheld,
    callouts: (o.callouts || []).map(encodeCallout),
    client_gone: !!o.client_gone,
  };
}

function getVM(id) {
  const vm = vms.get(id);
  if (!vm) throw new Error(`no VM ${id}`);
  return vm;
}

function getPlugin(id) {
  const p = plugins.get(id);
  if (!p) throw new Error(`no plugin ${id}`);
  return p;
}

// logMark is where a VM's logs stand; logsOf returns the lines of a level logged since a mark, as far as the
// VM kept them.
function logMark(vm) {
  return { ...vm.logTotal };
}

function logsOf(vm, level, mark) {
  const list = vm.logs[level];
  const n = Math.min(list.length, vm.logTotal[level] - mark[level]);
  return list.slice(list.length - n);
}

function startPlugin(vm, config) {
  const mark = logMark(vm);
  let root;
  try {
    root = vm.startPlugin(config);
  } catch (e) {
    if (e instanceof VMDead) return { error: e.message, critical: logsOf(vm, 'critical', mark) };
    throw e;
  }
  if (root === null) return { error: 'the plugin refused to start', critical: logsOf(vm, 'critical', mark) };
  const id = nextPlugin++;
  plugins.set(id, { vm, root });
  return { plugin: id };
}

const ops = {
  hello() {
    return { node: process.version, v8: process.versions.v8, exec_argv: process.execArgv, rules: CHECKS.size };
  },
  // load compiles a module once; VMs are instances of it.
  load({ name, path }) {
    const t = process.hrtime.bigint();
    const module = new WebAssembly.Module(fs.readFileSync(path));
    modules.set(name, module);
    return { compile_ns: Number(process.hrtime.bigint() - t) };
  },
  // vm instantiates a loaded module: _initialize, proxy_on_vm_start.
  vm({ module, env }) {
    const m = modules.get(module);
    if (!m) throw new Error(`module ${module} not loaded`);
    const t = process.hrtime.bigint();
    const vm = new VM(m, env);
    vms.set(vm.id, vm);
    return { vm: vm.id, instantiate_ns: Number(process.hrtime.bigint() - t), memory_bytes: vm.memoryBytes() };
  },
  // clear_shared_data forgets the process's shared data: the next exchange runs as in a freshly started Envoy.
  clear_shared_data() {
    SHARED.clear();
    return {};
  },
  close_vm({ vm }) {
    const v = getVM(vm);
    for (const [id, p] of plugins) if (p.vm === v) plugins.delete(id);
    vms.delete(vm);
    return {};
  },
  start({ vm, config }) {
    return startPlugin(getVM(vm), config);
  },
  stop({ plugin }) {
    const p = getPlugin(plugin);
    plugins.delete(plugin);
    try {
      p.vm.stopPlugin(p.root);
    } catch (e) {
      if (!(e instanceof VMDead)) throw e;
      return { dead: e.message };
    }
    return {};
  },
  exchange({ plugin, x }) {
    const p = getPlugin(plugin);
    const mark = logMark(p.vm);
    const out = encodeOutcome(play(p.vm, p.root, decodeExchange(x)));
    out.critical = logsOf(p.vm, 'critical', mark);
    return out;
  },
  // run: start a plugin with config, play one exchange, stop the plugin (the plugin tests' run()).
  run({ vm, config, x }) {
    const v = getVM(vm);
    const mark = logMark(v);
    const started = startPlugin(v, config);
    if (started.error) return { start_error: started.error, critical: started.critical };
    const p = plugins.get(started.plugin);
    const o = play(v, p.root, decodeExchange(x));
    if (o.withheld) {
      // run stops its plugin: a withheld request ends unanswered, as its stream would when Envoy gives up.
      pending.get(o.withheld).ex.finish();
      pending.delete(o.withheld);
    }
    const out = encodeOutcome(o);
    plugins.delete(started.plugin);
    try {
      v.stopPlugin(p.root);
    } catch (e) {
      if (!(e instanceof VMDead)) throw e;
    }
    out.critical = logsOf(v, 'critical', mark);
    out.errors = logsOf(v, 'error', mark);
    out.warnings = logsOf(v, 'warn', mark);
    return out;
  },
  // define keeps a decoded exchange for loop.
  define({ x }) {
    const id = nextRef++;
    refs.set(id, decodeExchange(x));
    return { ref: id };
  },
  // loop plays n exchanges on a plugin, rotating over refs, timed by the host itself (the Go side's round trip
  // is not in the figure). checkpoints: request counts at which to read the guest's linear memory size.
  loop({ plugin, refs: ids, n, checkpoints }) {
    const p = getPlugin(plugin);
    const xs = ids.map((r) => {
      const x = refs.get(r);
      if (!x) throw new Error(`no exchange ${r}`);
      return x;
    });
    const marks = new Set(checkpoints || []);
    const memory = [];
    const polls0 = p.vm.polls, wait0 = p.vm.pollWaitNs;
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    let last = null;
    for (let i = 1; i <= n; i++) {
      last = play(p.vm, p.root, xs[(i - 1) % xs.length]);
      if (last.rule || last.dead) {
        return { failed_at: i, outcome: encodeOutcome(last) };
      }
      if (marks.has(i)) memory.push({ requests: i, bytes: p.vm.memoryBytes() });
    }
    const ns = Number(process.hrtime.bigint() - t0);
    const cpu = process.cpuUsage(cpu0);
    return {
      ns,
      cpu_ns: (cpu.user + cpu.system) * 1000,
      memory,
      polls: p.vm.polls - polls0,
      poll_wait_ns: p.vm.pollWaitNs - wait0,
      last_status: last && (last.local ? last.local.status : last.client ? last.client.status : 0),
    };
  },
  memory({ vm }) {
    return { bytes: getVM(vm).memoryBytes() };
  },
  // tick: the plugin's proxy_on_tick; replies are the withheld exchanges it answered, with their outcomes.
  tick({ plugin, callouts }) {
    const p = getPlugin(plugin);
    const made = [];
    const answers = (callouts || []).map((c) => ({ status: c.status, headers: c.headers || [], body: Buffer.from(c.body || '', 'base64'), failed: !!c.failed }));
    try {
      return { replies: tick(p.vm, p.root, answers, made).map(encodeOutcome), callouts: made.map(encodeCallout) };
    } catch (e) {
      if (!(e instanceof VMDead)) throw e;
      return { dead: e.message, replies: [], callouts: made.map(encodeCallout) };
    }
  },
  // finish ends a withheld exchange that is still open (hostemu's Exchange.Finish).
  finish({ withheld }) {
    const p = pending.get(withheld);
    if (!p) throw new Error(`no withheld exchange ${withheld}`);
    pending.delete(withheld);
    try {
      p.ex.finish();
    } catch (e) {
      if (!(e instanceof VMDead)) throw e;
      return { dead: e.message };
    }
    return {};
  },
  counter({ vm, name }) {
    const v = getVM(vm);
    const id = v.metricIds.get(name);
    if (id === undefined) return { error: `metric ${name} is not defined` };
    return { value: v.metrics.get(id).value.toString() };
  },
  logs({ vm }) {
    return getVM(vm).logs;
  },
};

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let req;
  let res;
  try {
    req = JSON.parse(line);
    const op = ops[req.op];
    if (!op) throw new Error(`unknown op ${req.op}`);
    res = { id: req.id, ok: true, result: op(req) };
  } catch (e) {
    res = { id: req && req.id, ok: false, error: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(res) + '\n');
});
