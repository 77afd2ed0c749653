package hostemu

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
	"github.com/tetratelabs/wazero/api"
)

// streamReleaser forgets a finished stream the way Envoy does after proxy_on_log: Envoy calls the guest's
// proxy_on_delete and drops its own record. proxytest does neither: its stream map keeps every stream, and in
// wasm mode the guest keeps every context, so a long-lived host (the local gateway) grew by every request it
// ever served. proxytest exposes neither, so both are reached by reflection; when the SDK or wazero changes
// shape, New fails and names the field (tests then say so rather than leak quietly).
type streamReleaser struct {
	streams  reflect.Value // proxytest's map of stream states, settable
	onDelete api.Function  // the guest's proxy_on_delete (wasm mode only)
	stack    [1]uint64
}

func newStreamReleaser(emu proxytest.HostEmulator, vm types.VMContext) (streamReleaser, error) {
	var r streamReleaser
	http, err := field(reflect.ValueOf(emu), "httpHostEmulator")
	if err == nil {
		r.streams, err = field(http, "httpStreams")
	}
	if err != nil {
		return r, err
	}
	if wasmVM, ok := vm.(proxytest.WasmVMContext); ok && madeByProxytest(vm) {
		mod, err := GuestModule(wasmVM)
		if err != nil {
			return r, err
		}
		if r.onDelete = mod.ExportedFunction("proxy_on_delete"); r.onDelete == nil {
			return r, errors.New("the wasm module exports no proxy_on_delete")
		}
	}
	return r, nil
}

// open is the number of streams the emulator still holds.
func (r *streamReleaser) open() int { return r.streams.Len() }

// release forgets stream id; called with the host lock held, after CompleteHttpContext.
func (r *streamReleaser) release(id uint32) {
	if r.onDelete != nil {
		r.stack[0] = uint64(id)
		if err := r.onDelete.CallWithStack(context.Background(), r.stack[:]); err != nil {
			panic(fmt.Sprintf("proxy_on_delete: %v", err)) // a trap, as any failed call into the VM
		}
	}
	r.streams.SetMapIndex(reflect.ValueOf(id), reflect.Value{})
}

// madeByProxytest tells proxytest's own wasm VM from another implementation of its interface (a test's
// native stand-in), which has no guest to delete contexts in.
func madeByProxytest(vm types.VMContext) bool {
	t := reflect.TypeOf(vm)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == reflect.TypeOf(proxytest.EmulatorOption{}).PkgPath()
}

// GuestModule finds the guest's module instance in the wazero runtime proxytest made for vm: its linear
// memory and exports (the benchmarks read the memory size through it).
func GuestModule(vm proxytest.WasmVMContext) (api.Module, error) {
	rt, err := field(reflect.ValueOf(vm), "runtime")
	if err != nil {
		return nil, err
	}
	store, err := field(rt, "store")
	if err != nil {
		return nil, err
	}
	m, err := field(store, "moduleList")
	if err != nil {
		return nil, err
	}
	for !m.IsNil() {
		if mod, ok := m.Interface().(api.Module); ok && mod.ExportedFunction("proxy_on_memory_allocate") != nil {
			return mod, nil
		}
		if m, err = field(m, "next"); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("hostemu: no module exporting proxy_on_memory_allocate in the wazero store")
}

// field is a settable view of v's unexported struct field name (through pointers and interfaces).
func field(v reflect.Value, name string) (reflect.Value, error) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, fmt.Errorf("hostemu: nil %s while looking for field %s", v.Type(), name)
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("hostemu: %s is not a struct (looking for field %s)", v.Type(), name)
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("hostemu: %s has no field %s: the SDK or wazero changed (internal/hostemu/release.go)", v.Type(), name)
	}
	if !f.CanAddr() {
		return reflect.Value{}, fmt.Errorf("hostemu: field %s of %s is not addressable", name, v.Type())
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), nil
}
