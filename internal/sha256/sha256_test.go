package sha256

import (
	"crypto/hmac"
	stdsha256 "crypto/sha256"
	"math/rand/v2"
	"testing"
)

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestSum256MatchesCryptoSHA256(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		data := randomBytes(r, n)
		if got, want := Sum256(data), stdsha256.Sum256(data); got != want {
			t.Fatalf("length %d: %x, want %x", n, got, want)
		}
	}
}

// TestHMACMatchesCryptoHMAC: keys shorter than, as long as and longer than a block, messages of every length
// around the block boundaries, split into parts anywhere.
func TestHMACMatchesCryptoHMAC(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, keyLen := range []int{0, 1, 32, 63, 64, 65, 200} {
		key := randomBytes(r, keyLen)
		m := NewHMAC(key)
		for n := 0; n < 200; n++ {
			msg := randomBytes(r, n)
			want := hmac.New(stdsha256.New, key)
			want.Write(msg)
			cut := 0
			if n > 0 {
				cut = r.IntN(n + 1)
			}
			if got := m.Sum(msg[:cut], msg[cut:]); string(got[:]) != string(want.Sum(nil)) {
				t.Fatalf("key %d bytes, message %d bytes cut at %d: %x, want %x", keyLen, n, cut, got, want.Sum(nil))
			}
		}
	}
}
