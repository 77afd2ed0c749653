//go:build aidialect_profile && linux

package bench

import (
	"os"
	"os/exec"
	"sort"
	"strings"
)

// Go's wasm linker writes every function's name into the module's name section (unless -ldflags=-s), with
// each character outside [A-Za-z0-9_.] replaced by '_': "github.com/aidialect/aidialect/translate.(*RequestBody).Parse"
// becomes "github.com_aidialect_aidialect_translate.__RequestBody_.Parse". wazero hands that name to
// function listeners (api.FunctionDefinition.Name) and keeps it in the compiled module. The package is found
// again by matching the mangled import paths of the module's dependencies (go list -deps).

// goNames turns name-section names back into Go packages and readable names.
type goNames struct {
	mangled []string          // mangled package paths, longest first
	path    map[string]string // mangled -> import path
	imports map[string]string // normalised import field name -> "module.field" (proxy_get_buffer_bytes)
}

func mangle(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// newGoNames lists the packages the given main packages link (for GOOS=wasip1).
func newGoNames(pkgs ...string) (*goNames, error) {
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	n := &goNames{path: map[string]string{}, imports: map[string]string{}}
	for _, p := range strings.Fields(string(out)) {
		m := mangle(p)
		n.path[m] = p
		n.mangled = append(n.mangled, m)
	}
	sort.Slice(n.mangled, func(i, j int) bool { return len(n.mangled[i]) > len(n.mangled[j]) })
	// The host functions the modules import (one Go wrapper each calls it: runtime.clock_time_get,
	// internal.ProxyGetBufferBytes).
	for _, imp := range []string{
		"wasi_snapshot_preview1.sched_yield", "wasi_snapshot_preview1.proc_exit", "wasi_snapshot_preview1.args_get",
		"wasi_snapshot_preview1.args_sizes_get", "wasi_snapshot_preview1.clock_time_get", "wasi_snapshot_preview1.environ_get",
		"wasi_snapshot_preview1.environ_sizes_get", "wasi_snapshot_preview1.fd_write", "wasi_snapshot_preview1.random_get",
		"wasi_snapshot_preview1.poll_oneoff", "env.proxy_log", "env.proxy_send_local_response",
		"env.proxy_get_header_map_value", "env.proxy_get_header_map_pairs", "env.proxy_set_header_map_pairs",
		"env.proxy_get_buffer_bytes", "env.proxy_set_buffer_bytes", "env.proxy_call_foreign_function",
		"env.proxy_set_tick_period_milliseconds", "env.proxy_set_effective_context", "env.proxy_define_metric",
		"env.proxy_increment_metric", "env.proxy_get_metric", "env.proxy_add_header_map_value",
		"env.proxy_replace_header_map_value", "env.proxy_remove_header_map_value", "env.proxy_get_property",
	} {
		_, field, _ := strings.Cut(imp, ".")
		n.imports[normaliseImport(field)] = imp
	}
	return n, nil
}

func normaliseImport(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// fnInfo is what the profile says about one function.
type fnInfo struct {
	wasm  string // the name-section name, as wazero reports it (api.FunctionDefinition.Name)
	name  string // readable: import path + name, receivers as (*T)
	pkg   string // the Go package (runtime split by what it does), or a wazero/host bucket
	short string // package's last element + name, for tables
	host  string // for the Go wrapper of an imported function: the import ("env.proxy_get_buffer_bytes")
}

func (n *goNames) info(wasmName string) fnInfo {
	pkg, rest := "", wasmName
	for _, m := range n.mangled {
		if strings.HasPrefix(wasmName, m+".") {
			pkg, rest = n.path[m], wasmName[len(m)+1:]
			break
		}
	}
	switch {
	case pkg != "":
	case strings.HasPrefix(wasmName, "main."):
		pkg, rest = "main", wasmName[len("main."):]
	case strings.HasPrefix(wasmName, "proxy_on_") || strings.HasPrefix(wasmName, "proxy_abi_"):
		pkg = "(proxy-wasm exports)"
	case strings.HasPrefix(wasmName, "type_.eq."):
		pkg = "(generated type equality)"
	case wasmName == "memeqbody" || wasmName == "cmpbody" || wasmName == "memcmp" || wasmName == "memchr":
		pkg = "internal/bytealg"
	case strings.Contains(wasmName, "."):
		pkg, rest, _ = strings.Cut(wasmName, ".")
	default:
		pkg = "runtime" // the runtime's assembly: wasm_pc_f_loop, gcWriteBarrier, callRet
	}
	readable := demangleRest(rest)
	info := fnInfo{wasm: wasmName, pkg: pkg, name: pkg + "." + readable}
	if strings.HasPrefix(pkg, "(") {
		info.name = readable
	}
	last := pkg[strings.LastIndexByte(pkg, '/')+1:]
	if pkg == "main" {
		info.pkg = "main (plugin, or the floor filter)"
	}
	info.short = last + "." + readable
	if strings.HasPrefix(pkg, "(") {
		info.short = readable
	}
	if pkg == "runtime" || pkg == "syscall" || strings.HasSuffix(pkg, "proxywasm/internal") {
		if imp, ok := n.imports[normaliseImport(rest)]; ok {
			info.host = imp
		}
	}
	if pkg == "runtime" {
		info.pkg = "runtime: " + runtimeCategory(readable)
	}
	return info
}

// demangleRest makes "__RequestBody_.Parse" "(*RequestBody).Parse" again.
func demangleRest(s string) string {
	if strings.HasPrefix(s, "__") {
		if i := strings.Index(s, "_."); i > 2 {
			return "(*" + s[2:i] + ")." + s[i+2:]
		}
	}
	return s
}

// runtimeCategory sorts the Go runtime's functions by what they do, so the candidates the issue names
// (allocation, collection, stack growth) can be read off the profile.
func runtimeCategory(fn string) string {
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(fn, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("memmove", "memclrNoHeapPointers", "memclrHasPointers", "typedmemmove", "typedslicecopy", "typedmemclr",
		"bulkBarrierPreWrite", "wbBuf", "gcWriteBarrier", "(*wbBuf)", "wbMove", "wbZero"):
		return "memmove/memclr & write barriers"
	case has("mallocgc", "nextFreeFast", "(*mcache)", "(*mcentral)", "(*mheap)", "(*mspan)", "newobject", "newarray",
		"makeslice", "growslice", "makemap", "rawstring", "rawbyteslice", "rawruneslice", "slicebytetostring",
		"stringtoslicebyte", "concatstring", "heapSetType", "(*fixalloc)", "persistentalloc", "(*pageAlloc)", "(*pallocBits)",
		"(*pallocData)", "(*pageCache)", "spanOf", "publicationBarrier", "(*mLockProfile)", "profilealloc",
		"deductAssistCredit", "(*gcBits)", "newMarkBits", "newAllocBits", "nextMarkBitArenaEpoch", "sysAlloc", "sysUsed",
		"sysMap", "(*linearAlloc)", "(*mProfCycleHolder)", "mProf_", "(*heapBits", "writeHeapBits", "(*writeUserArenaHeapBits)",
		"roundupsize", "divRoundUp", "alignUp", "(*consistentHeapStats)", "(*limiterEvent)", "(*gcCPULimiterState)", "memstats"):
		return "malloc"
	case has("gc", "(*gcWork)", "(*gcControllerState)", "scanobject", "scanblock", "scanstack", "scanframeworker",
		"scanConservative", "greyobject", "markroot", "markBits", "findObject", "(*markBits)", "shade", "sweep", "(*sweep",
		"bgsweep", "bgscavenge", "(*scavenge", "(*scavChunkData)", "(*scavengeIndex)", "finishsweep", "(*activeSweep)",
		"clearpools", "(*workbuf)", "getempty", "putempty", "putfull", "trygetfull", "handoff", "prepareFreeWorkbufs",
		"freeSomeWbufs", "setGCPhase", "forEachP", "stopTheWorld", "startTheWorld", "semacquire", "semrelease",
		"(*mspan).markBitsForIndex", "wakeScavenger", "markrootSpans", "stackScanned", "(*stackScanState)",
		"(*stackObject)", "(*stackObjectBuf)", "poolcleanup", "freeStackSpans", "mProf_Flush", "mProf_NextCycle",
		"readGCStats", "(*gcCPULimiter", "(*piController)", "(*mcache).prepareForSweep", "stopTheWorldWithSema",
		"startTheWorldWithSema", "(*sysMemStat)", "(*headTailIndex)", "(*atomicHeadTailIndex)", "(*spanSet)"):
		return "GC"
	case has("morestack", "newstack", "copystack", "adjust", "stackalloc", "stackfree", "stackcache", "stackpool",
		"(*stkframe)", "(*unwinder)", "pcvalue", "funcInfo", "findfunc", "funcdata", "pcdatavalue", "step", "readvarint",
		"(*moduledata)", "funcspdelta", "funcMaxSPDelta", "syncadjustsudogs", "fillstack", "stackcacherefill",
		"stackcacherelease", "gostartcallfn", "gostartcall", "(*funcInfo)", "funcname", "funcNameForPrint",
		"shrinkstack", "isShrinkStackSafe", "(*inlineUnwinder)", "newInlineUnwinder", "(*inlineFrame)",
		"getStackMap", "(*_func)", "stackmapdata", "pcdatastart", "(*stackmap)"):
		return "stack growth & stack walks"
	case has("wasm_pc_f_loop", "_rt0", "callRet", "gopark", "goready", "ready", "schedule", "findRunnable", "execute",
		"mcall", "gogo", "park_m", "goschedImpl", "gosched", "handleEvent", "handleAsyncEvent", "beforeIdle", "pause",
		"checkTimers", "nanotime", "walltime", "clock_time_get", "wasmExport", "notInitialized", "(*timers)",
		"runqget", "runqput", "globrunq", "injectglist", "wakep", "resetspinning", "stealWork", "checkdead",
		"(*gQueue)", "(*gList)", "casgstatus", "casGToWaiting", "casgcopystack", "lock", "unlock", "lock2", "unlock2",
		"acquirem", "releasem", "systemstack", "getg", "procyield", "osyield", "sched_yield", "goexit", "newproc",
		"(*p)", "(*m)", "resetForSleep", "acquirep", "releasep", "wirep", "(*randomOrder)", "(*randomEnum)", "cheaprand",
		"(*timer)", "(*mutex)", "sysmon", "retake", "entersyscall", "exitsyscall", "reentersyscall", "mPark", "notesleep",
		"notewakeup", "noteclear", "goyield", "(*lockRank)", "lockWithRank", "unlockWithRank", "(*guintptr)", "(*puintptr)",
		"(*muintptr)", "dropg", "startm", "stopm", "handoffp", "(*pollDesc)", "netpoll"):
		return "scheduler & exports"
	case has("mapaccess", "mapassign", "mapdelete", "mapiter", "mapclear", "memhash", "strhash", "aeshash", "c64hash",
		"memhash32", "memhash64", "f32hash", "f64hash", "interhash", "nilinterhash", "typehash", "(*hmap)", "(*bmap)"):
		return "maps & hashing"
	case has("assertE2I", "assertI2I", "getitab", "(*itabTableType)", "convT", "convI", "panic", "gopanic", "recover",
		"gorecover", "deferreturn", "deferproc", "(*_panic)", "freedefer", "newdefer", "deferprocStack", "deferrangefunc",
		"addOneOpenDeferFrame", "runOpenDeferFrame", "goPanic", "panicIndex", "panicSlice", "throw", "fatal"):
		return "interfaces, defer & panics"
	}
	return "other"
}
