package v8host

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/goldencase"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// TestV8Memory is bench's TestMemory under V8: 100,000 mixed requests through one VM of the compiled filter
// (every golden case that fits one configuration, re-pointed at one provider per dialect, plus bench's two
// scenarios, rotating), and the same through the floor filter; it prints the guest's linear memory size
// before and after 1k, 10k and 100k requests, and fails when the filter's grew more than 10% from 10k to
// 100k. The mix, configuration, checkpoints and table are TestMemory's (benchdata.MemoryMix,
// internal/wasmtest), so the figures sit beside TestMemory's wazero ones. It runs when AIDIALECT_V8_MEMORY=1
// (make bench sets it): 200,000 exchanges are no unit test.
func TestV8Memory(t *testing.T) {
	if os.Getenv("AIDIALECT_V8_MEMORY") != "1" {
		t.Skip("skipped: set AIDIALECT_V8_MEMORY=1 (make bench does) to run 100,000 requests under V8")
	}
	filterWasm(t)
	h := sharedHost(t)
	mix, cfg, err := benchdata.MemoryMix(filepath.Join("..", goldencase.Dir))
	if err != nil {
		t.Fatal(err)
	}
	checkpoints := wasmtest.MemoryCheckpoints
	sizes := map[string][]uint64{}
	for _, name := range []string{filterName, floorName} {
		v8Module(t, h, name)
		vm, err := h.NewVM(name, nil) // a VM of its own: memory starts at the module's initial size
		if err != nil {
			t.Fatal(err)
		}
		plugin, err := vm.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		start, err := vm.MemoryBytes()
		if err != nil {
			t.Fatal(err)
		}
		sizes[name] = append(sizes[name], start)
		var refs []Ref
		for _, m := range mix {
			// The first round checks the routing reaches the intended provider and dialect.
			x := v8Exchange(m.X)
			o, err := plugin.Exchange(x)
			if err != nil {
				t.Fatal(err)
			}
			if v := o.Verdict(); v != "" {
				t.Fatalf("%s, %s: %s %v", name, m.X.Name, v, o.Rule)
			}
			if name == filterName {
				got := o.Client
				if o.Local != nil {
					got = o.Local
				}
				if got == nil || got.Status != m.Status || !m.AnyBody && !bytes.Equal(got.Body, m.Want) {
					t.Fatalf("%s: client got %+v\nwant %d %s", m.X.Name, got, m.Status, m.Want)
				}
			}
			ref, err := h.Define(x)
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref)
		}
		// That first round was requests 1 to len(mix) of the count, as in TestMemory; the loop goes on from
		// mix[0] with request len(mix)+1.
		last := checkpoints[len(checkpoints)-1]
		res, err := plugin.Loop(refs, last-len(mix), shift(checkpoints, -len(mix)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, m := range res.Memory {
			sizes[name] = append(sizes[name], m.Bytes)
		}
		if len(sizes[name]) != len(checkpoints)+1 {
			t.Fatalf("%s: %d memory readings", name, len(sizes[name]))
		}
		t.Logf("%s: %d requests in %.1f s under V8", name, last, float64(res.NS)/1e9)
		plugin.Stop()
		vm.Close()
	}
	engine := fmt.Sprintf("V8 (node %s, V8 %s, %s)", h.Info.Node, h.Info.V8, strings.Join(h.Info.ExecArgv, " "))
	t.Log("\n" + wasmtest.MemoryTable(engine, len(mix), sizes[filterName], sizes[floorName]))
	wasmtest.CheckMemoryGrowth(t, sizes[filterName], " under V8")
}

func shift(xs []int, by int) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = x + by
	}
	return out
}
