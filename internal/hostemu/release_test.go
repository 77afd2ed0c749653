package hostemu_test

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// release.go forgets a finished stream as Envoy does: the emulator drops its record, and in wasm mode the
// guest deletes its context (proxy_on_delete), so that its memory can be reused.

// TestFinishForgetsTheStream: a finished exchange leaves nothing in the emulator, as Envoy drops a stream
// after proxy_on_log and proxy_on_delete (proxytest alone keeps every stream for the host's life).
func TestFinishForgetsTheStream(t *testing.T) {
	f := &filter{reqHeaders: func(bool) types.Action { return types.ActionContinue }}
	h := host(t, f)
	for i := 0; i < 3; i++ {
		x := h.Begin()
		must(t, x.SendRequest(slices.Clone(request), nil))
		x.Finish()
	}
	open := h.Begin()
	if n := h.OpenStreams(); n != 1 {
		t.Errorf("%d streams held, want only the open one", n)
	}
	open.Finish()
	if n := h.OpenStreams(); n != 0 {
		t.Errorf("%d streams held after every exchange finished", n)
	}
}

// TestOpenStreams: whatever state an exchange ended in, Finish forgets exactly that stream, once.
func TestOpenStreams(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, h *hostemu.Host) // leaves the host with want streams open
		want int
	}{
		{"begun, never sent", func(t *testing.T, h *hostemu.Host) { h.Begin().Finish() }, 0},
		{"begun and left open", func(t *testing.T, h *hostemu.Host) { h.Begin(); h.Begin() }, 2},
		{"finished after the response", func(t *testing.T, h *hostemu.Host) {
			x := h.Begin()
			must(t, x.SendRequest(slices.Clone(request), chunks("{}")))
			must(t, x.RelayResponse(200, [][2]string{{"content-type", "application/json"}}, strings.NewReader("{}"), nil, &recorder{}))
			x.Finish()
		}, 0},
		{"finished twice", func(t *testing.T, h *hostemu.Host) {
			x, y := h.Begin(), h.Begin()
			x.Finish()
			x.Finish()
			_ = y
		}, 1},
		{"finished out of order", func(t *testing.T, h *hostemu.Host) {
			a, b, c := h.Begin(), h.Begin(), h.Begin()
			b.Finish()
			c.Finish()
			_ = a
		}, 1},
		{"a local reply", func(t *testing.T, h *hostemu.Host) {
			x := h.Begin()
			must(t, x.SendRequest(append(slices.Clone(request), [2]string{"x-reply", "1"}), nil))
			if x.Local == nil || x.Local.Status != 418 {
				t.Fatalf("no local reply: %+v", x.Local)
			}
			x.Finish()
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &filter{reqHeaders: func(bool) types.Action {
				if v, _ := proxywasm.GetHttpRequestHeader("x-reply"); v != "" {
					must(t, proxywasm.SendHttpResponse(418, [][2]string{{"content-type", "text/plain"}}, []byte("no"), -1))
					return types.ActionPause
				}
				return types.ActionContinue
			}}
			h := host(t, f)
			tt.run(t, h)
			if n := h.OpenStreams(); n != tt.want {
				t.Errorf("%d streams open, want %d", n, tt.want)
			}
		})
	}
}

// guestConfig starts the aidialect filter.
const guestConfig = `{"providers":[{"name":"p","dialect":"openai","host":"api.openai.com","api_key":"k","models":[{"name":"*"}]}]}`

// guestModule is the aidialect module, AIDIALECT_WASM (built by make build); the rows skip without it.
func guestModule(t *testing.T) []byte {
	t.Helper()
	path := os.Getenv("AIDIALECT_WASM")
	if path == "" {
		t.Skip("AIDIALECT_WASM is not set (make build, then AIDIALECT_WASM=$PWD/dist/aidialect.wasm)")
	}
	module, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return module
}

// ownGuestVM is the module in a VM of its own, for a row that kills it; stderr returns what the guest wrote
// there (a Go guest prints its panic before it exits).
func ownGuestVM(t *testing.T) (vm proxytest.WasmVMContext, stderr func() string) {
	t.Helper()
	module := guestModule(t)
	out, err := os.CreateTemp(t.TempDir(), "guest-stderr")
	if err != nil {
		t.Fatal(err)
	}
	// proxytest hands the guest os.Stderr as it is when the VM is made; no test here runs in parallel.
	saved := os.Stderr
	os.Stderr = out
	vm, err = proxytest.NewWasmVMContext(module)
	os.Stderr = saved
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Close(); out.Close() })
	return vm, func() string {
		b, err := os.ReadFile(out.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

var sharedGuest proxytest.WasmVMContext

// guestVM is a VM of the module shared by the rows that leave it alive.
func guestVM(t *testing.T) proxytest.WasmVMContext {
	t.Helper()
	module := guestModule(t)
	if sharedGuest == nil {
		vm, err := proxytest.NewWasmVMContext(module)
		if err != nil {
			t.Fatal(err)
		}
		sharedGuest = vm
	}
	return sharedGuest
}

// listModels is a request the filter answers itself.
var listModels = [][2]string{{":method", "GET"}, {":path", "/v1/models"}, {":authority", "gateway.local"}}

// TestGuestForgetsFinishedStreams: in wasm mode Finish deletes the guest's context too. The guest's own
// proxy_on_delete tells: it deletes a context it holds, and panics ("invalid context") on one it forgot. One
// VM serves both steps, the open stream first: the second step kills it.
func TestGuestForgetsFinishedStreams(t *testing.T) {
	vm, stderr := ownGuestVM(t)
	h, err := hostemu.New(vm, []byte(guestConfig))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mod, err := hostemu.GuestModule(vm)
	if err != nil {
		t.Fatal(err)
	}
	deleteContext := func(x *hostemu.Exchange) error {
		_, err := mod.ExportedFunction("proxy_on_delete").Call(context.Background(), uint64(x.ID()))
		return err
	}
	answered := func() *hostemu.Exchange {
		x := h.Begin()
		must(t, x.SendRequest(slices.Clone(listModels), nil))
		if x.Local == nil || x.Local.Status != 200 {
			t.Fatalf("the filter did not answer: %+v", x.Local)
		}
		return x
	}

	open := answered() // never finished: its context is the test's to delete
	if err := deleteContext(open); err != nil || stderr() != "" {
		t.Fatalf("deleting an open stream's context: %v, guest stderr %q; want neither", err, stderr())
	}

	finished := answered()
	finished.Finish()
	const forgotten = "panic: invalid context on proxy_on_delete"
	if err := deleteContext(finished); err == nil || !strings.Contains(stderr(), forgotten) {
		t.Errorf("deleting a finished stream's context again: %v, guest stderr %q; want a trap after %q", err, stderr(), forgotten)
	}
}

// TestGuestMemoryReleased: with every finished stream deleted in the guest, ten thousand exchanges on one warm
// VM do not grow its linear memory past a slack of a few pages (the collector's own pacing); every context
// the guest kept would cost it some 800 bytes, 8 MB in all.
func TestGuestMemoryReleased(t *testing.T) {
	const exchanges, slack = 10000, 4 * 65536
	vm := guestVM(t)
	h, err := hostemu.New(vm, []byte(guestConfig))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mod, err := hostemu.GuestModule(vm)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(n int) {
		for i := 0; i < n; i++ {
			x := h.Begin()
			must(t, x.SendRequest(slices.Clone(listModels), nil))
			x.Finish()
		}
	}
	serve(2000)
	warm := mod.Memory().Size()
	serve(exchanges)
	got := mod.Memory().Size()
	t.Logf("linear memory %d bytes warm, %d after %d more exchanges", warm, got, exchanges)
	if got > warm+slack {
		t.Errorf("linear memory grew from %d to %d bytes over %d finished exchanges", warm, got, exchanges)
	}
	if n := h.OpenStreams(); n != 0 {
		t.Errorf("%d streams open", n)
	}
}

// TestGuestModule finds the guest's module in proxytest's runtime: the one exporting the proxy-wasm ABI, with
// its memory.
func TestGuestModule(t *testing.T) {
	vm := guestVM(t)
	mod, err := hostemu.GuestModule(vm)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"proxy_on_memory_allocate", "proxy_on_delete", "proxy_on_context_create"} {
		if mod.ExportedFunction(name) == nil {
			t.Errorf("the module found exports no %s", name)
		}
	}
	if mod.Memory() == nil || mod.Memory().Size() == 0 {
		t.Error("the module found has no memory")
	}
	if _, err := hostemu.GuestModule(&standIn{}); err == nil || !strings.Contains(err.Error(), "has no field runtime") {
		t.Errorf("a stand-in VM: %v, want an error naming the missing field", err)
	}
}

// standIn implements proxytest.WasmVMContext natively, as a test's stand-in for a module would.
type standIn struct {
	vm
}

func (*standIn) Close() error { return nil }

// TestMadeByProxytest: only proxytest's own wasm VM has a guest whose contexts need deleting.
func TestMadeByProxytest(t *testing.T) {
	tests := []struct {
		name string
		vm   func(t *testing.T) types.VMContext
		want bool
	}{
		{"a native VM", func(*testing.T) types.VMContext { return &vm{f: &filter{}} }, false},
		{"a native stand-in for a wasm VM", func(*testing.T) types.VMContext { return &standIn{vm{f: &filter{}}} }, false},
		{"proxytest's wasm VM", func(t *testing.T) types.VMContext { return guestVM(t) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hostemu.MadeByProxytest(tt.vm(t)); got != tt.want {
				t.Errorf("madeByProxytest = %v, want %v", got, tt.want)
			}
		})
	}
	// A stand-in gets no proxy_on_delete: its streams are finished and forgotten all the same.
	f := &filter{}
	h, err := hostemu.New(&standIn{vm{f: f}}, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	x := h.Begin()
	must(t, x.SendRequest(slices.Clone(request), nil))
	x.Finish()
	if n := h.OpenStreams(); n != 0 || !slices.Contains(f.calls, "done") {
		t.Errorf("%d streams open, calls %q", n, f.calls)
	}
}

// TestField: the reflective access reaches unexported fields through pointers and interfaces, settably, and
// says which field and which file when the shape it expects changed.
func TestField(t *testing.T) {
	type inner struct{ n int }
	type outer struct {
		in  *inner
		any any
		s   string
	}
	o := &outer{in: &inner{n: 1}, any: &inner{n: 2}}
	tests := []struct {
		name    string
		v       reflect.Value
		field   string
		set     func(f reflect.Value)
		check   func() bool
		wantErr string
	}{
		{"an unexported field, set", reflect.ValueOf(o), "s", func(f reflect.Value) { f.SetString("x") },
			func() bool { return o.s == "x" }, ""},
		{"through a pointer field", func() reflect.Value { f, _ := hostemu.Field(reflect.ValueOf(o), "in"); return f }(), "n",
			func(f reflect.Value) { f.SetInt(10) }, func() bool { return o.in.n == 10 }, ""},
		{"through an interface field", func() reflect.Value { f, _ := hostemu.Field(reflect.ValueOf(o), "any"); return f }(), "n",
			func(f reflect.Value) { f.SetInt(20) }, func() bool { return o.any.(*inner).n == 20 }, ""},
		{"a missing field names itself and this file", reflect.ValueOf(o), "streams", nil, nil,
			"hostemu: hostemu_test.outer has no field streams: the SDK or wazero changed (internal/hostemu/release.go)"},
		{"a nil pointer", reflect.ValueOf((*outer)(nil)), "s", nil, nil,
			"hostemu: nil *hostemu_test.outer while looking for field s"},
		{"not a struct", reflect.ValueOf(&[]int{1}), "s", nil, nil,
			"hostemu: []int is not a struct (looking for field s)"},
		{"an unaddressable struct", reflect.ValueOf(outer{}), "s", nil, nil,
			"hostemu: field s of hostemu_test.outer is not addressable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := hostemu.Field(tt.v, tt.field)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.set(f)
			if !tt.check() {
				t.Error("the set did not reach the field")
			}
		})
	}
}
