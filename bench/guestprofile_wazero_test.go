//go:build aidialect_profile && linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"unicode"
	"unsafe"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// The profiler's access to wazero and proxytest internals. proxytest creates its wazero runtime with a
// context of its own, and wazero binds function listeners when a module is compiled, from the context given
// to CompileModule: there is no way to pass a listener factory through proxytest.NewWasmVMContext. So
// listenedGuest compiles the module a second time in proxytest's own runtime (whose "env" host module is
// proxytest's emulator) with the factory in the context, instantiates it, closes the first instance and points
// proxytest's guest ABI table at the new instance's exports. Everything proxytest's host functions do goes
// through the calling module, so the emulator cannot tell the difference. Pinned to the SDK and wazero
// versions in go.mod, like internal/hostemu/release.go: a changed field fails loudly, by name.

// listenedGuest is loadGuest with every local function of the module given to factory (nil: none listened,
// the module as make build runs it).
func listenedGuest(name string, wasm []byte, factory experimental.FunctionListenerFactory) (*guest, error) {
	vm, err := proxytest.NewWasmVMContext(wasm)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", name, err)
	}
	g, err := swapInListeners(vm, wasm, factory)
	if err != nil {
		vm.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	g.name = name
	return g, nil
}

func swapInListeners(vm proxytest.WasmVMContext, wasm []byte, factory experimental.FunctionListenerFactory) (*guest, error) {
	first, err := hostemu.GuestModule(vm)
	if err != nil {
		return nil, err
	}
	if factory == nil {
		return &guest{vm: vm, mod: first}, nil
	}
	rtField, err := internalField(reflect.ValueOf(vm), "runtime")
	if err != nil {
		return nil, err
	}
	rt, ok := rtField.Interface().(wazero.Runtime)
	if !ok {
		return nil, errors.New("proxytest's runtime field is not a wazero.Runtime")
	}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), factory)
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, err
	}
	if err := first.Close(context.Background()); err != nil {
		return nil, err
	}
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().
		WithStartFunctions("_initialize").WithStdout(os.Stderr).WithStderr(os.Stderr))
	if err != nil {
		return nil, err
	}
	abi, err := internalField(reflect.ValueOf(vm), "abi")
	if err != nil {
		return nil, err
	}
	for i := 0; i < abi.NumField(); i++ {
		export := snakeExport(abi.Type().Field(i).Name)
		fn := mod.ExportedFunction(export)
		if fn == nil {
			return nil, fmt.Errorf("proxytest's guest ABI names %s, which the module does not export", export)
		}
		f := abi.Field(i)
		reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(fn))
	}
	if got, err := hostemu.GuestModule(vm); err != nil || got != mod {
		return nil, fmt.Errorf("the listened instance is not the one hostemu finds (%v)", err)
	}
	return &guest{vm: vm, mod: mod}, nil
}

// snakeExport turns proxytest's ABI field names (proxyOnVMStart, proxyOnRequestBody) into the proxy-wasm
// export names (proxy_on_vm_start, proxy_on_request_body).
func snakeExport(field string) string {
	var b strings.Builder
	for i, r := range strings.ReplaceAll(field, "VM", "Vm") {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// internalField is a usable view of v's unexported struct field name (through pointers and interfaces).
func internalField(v reflect.Value, name string) (reflect.Value, error) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, fmt.Errorf("nil %s while looking for field %s", v.Type(), name)
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("%s is not a struct (looking for field %s)", v.Type(), name)
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("%s has no field %s: the SDK or wazero changed (bench/guestprofile_wazero_test.go)", v.Type(), name)
	}
	if !f.CanAddr() {
		return reflect.Value{}, fmt.Errorf("field %s of %s is not addressable", name, v.Type())
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), nil
}

func internalPath(v reflect.Value, names ...string) (reflect.Value, error) {
	var err error
	for _, n := range names {
		if v, err = internalField(v, n); err != nil {
			return v, err
		}
	}
	return v, nil
}

// codeRegion is a piece of machine code wazero generated: a compiled module's functions, or a trampoline.
type codeRegion struct {
	start, end uintptr
	label      string   // what the region is, for code that is no guest function
	offsets    []int    // functions' start offsets from start (guest modules only), ascending
	names      []string // index-correlated with offsets
}

// codeMap locates wazero's machine code in the process: a sampled instruction address inside the guest
// module's code names its wasm function (hence its Go function).
type codeMap struct {
	regions []codeRegion // sorted by start
}

func (m *codeMap) lookup(pc uintptr) (fn string, guest bool, ok bool) {
	i := sort.Search(len(m.regions), func(i int) bool { return m.regions[i].end > pc })
	if i == len(m.regions) || pc < m.regions[i].start {
		return "", false, false
	}
	r := &m.regions[i]
	if r.offsets == nil {
		return r.label, false, true
	}
	off := int(pc - r.start)
	j := sort.SearchInts(r.offsets, off+1) - 1
	if j < 0 {
		return r.label, false, true
	}
	return r.names[j], true, true
}

// machineCode reads where wazero's optimizing compiler put every compiled module of g's runtime, and its
// shared trampolines.
func machineCode(g *guest) (*codeMap, error) {
	engine, err := internalPath(reflect.ValueOf(g.vm), "runtime", "store", "Engine")
	if err != nil {
		return nil, err
	}
	mods, err := internalField(engine, "compiledModules")
	if err != nil {
		return nil, err
	}
	m := &codeMap{}
	add := func(b reflect.Value, label string) {
		if b.Len() == 0 {
			return
		}
		start := b.Pointer()
		m.regions = append(m.regions, codeRegion{start: start, end: start + uintptr(b.Len()), label: label})
	}
	iter := mods.MapRange()
	for iter.Next() {
		cm := iter.Value()
		exe, err := internalPath(cm, "executables", "executable")
		if err != nil {
			return nil, err
		}
		offsets, err := internalField(cm, "functionOffsets")
		if err != nil {
			return nil, err
		}
		module, err := internalField(cm, "module")
		if err != nil {
			return nil, err
		}
		host, err := internalField(module, "IsHostModule")
		if err != nil {
			return nil, err
		}
		imports, err := internalField(module, "ImportFunctionCount")
		if err != nil {
			return nil, err
		}
		names := map[uint32]string{}
		if ns, err := internalField(module, "NameSection"); err == nil && !ns.IsNil() {
			fnames, err := internalField(ns, "FunctionNames")
			if err != nil {
				return nil, err
			}
			for i := 0; i < fnames.Len(); i++ {
				a := fnames.Index(i)
				names[uint32(a.FieldByName("Index").Uint())] = a.FieldByName("Name").String()
			}
		}
		preambles, err := internalPath(cm, "executables", "entryPreambles")
		if err != nil {
			return nil, err
		}
		for i := 0; i < preambles.Len(); i++ {
			add(preambles.Index(i), "wazero: entry preamble")
		}
		if exe.Len() == 0 {
			continue
		}
		if host.Bool() {
			add(exe, "wazero: host function trampolines")
			continue
		}
		start := exe.Pointer()
		r := codeRegion{start: start, end: start + uintptr(exe.Len()), label: "wazero: guest module (no function)"}
		for i := 0; i < offsets.Len(); i++ {
			r.offsets = append(r.offsets, int(offsets.Index(i).Int()))
			idx := uint32(i) + uint32(imports.Uint())
			name := names[idx]
			if name == "" {
				name = fmt.Sprintf("$%d", idx)
			}
			r.names = append(r.names, name)
		}
		m.regions = append(m.regions, r)
	}
	shared, err := internalField(engine, "sharedFunctions")
	if err != nil {
		return nil, err
	}
	for v := shared; v.Kind() == reflect.Pointer; v = v.Elem() {
		if v.IsNil() {
			break
		}
		s := v.Elem()
		for i := 0; i < s.NumField(); i++ {
			f, _ := internalField(s, s.Type().Field(i).Name)
			switch f.Kind() {
			case reflect.Slice:
				add(f, "wazero: "+strings.TrimSuffix(s.Type().Field(i).Name, "Executable"))
			case reflect.Map:
				it := f.MapRange()
				for it.Next() {
					add(it.Value(), "wazero: listener trampoline")
				}
			}
		}
		break
	}
	sort.Slice(m.regions, func(i, j int) bool { return m.regions[i].start < m.regions[j].start })
	return m, nil
}
