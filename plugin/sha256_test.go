package main

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

func TestSum256MatchesCryptoSHA256(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if got, want := sum256(data), sha256.Sum256(data); got != want {
			t.Fatalf("length %d: %x, want %x", n, got, want)
		}
	}
}
