// gotest.mjs runs a Go test binary built for wasip1 under Node's V8, as Envoy runs the filter (node
// --no-liftoff: TurboFan only), so that a package's benchmarks can be compared engine against engine:
//
//   GOOS=wasip1 GOARCH=wasm go test -c -o /tmp/translate.wasm ./translate
//   cd translate && node --no-liftoff ../internal/v8host/gotest.mjs /tmp/translate.wasm -test.run '^$' -test.bench SSEEvent
//
// The binary sees the file system from / and the arguments after its path; its exit code is node's.
import { WASI } from 'node:wasi';
import { readFileSync } from 'node:fs';

const [file, ...args] = process.argv.slice(2);
if (!file) {
  console.error('usage: node --no-liftoff gotest.mjs <test binary .wasm> [-test.flags...]');
  process.exit(2);
}
const wasi = new WASI({ version: 'preview1', args: [file, ...args], env: { HOME: process.env.HOME || '/tmp' }, preopens: { '/': '/' }, returnOnExit: true });
const module = await WebAssembly.compile(readFileSync(file));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
