package main

import (
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

func BenchmarkZZNativeJSON(b *testing.B) {
	host, err := hostemu.New(&vmContext{}, []byte(benchdata.Config))
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	x := benchdata.JSONScenario("llama-3-70b")
	var c wasmtest.Client
	var r wasmtest.ChunkReader
	for range 10 {
		if _, err := wasmtest.Play(host, x, &c, &r); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := wasmtest.Play(host, x, &c, &r); err != nil {
			b.Fatal(err)
		}
	}
}
