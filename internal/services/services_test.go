package services

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestRealServices: Redis and the rate-limit service start, count a descriptor's hits in one window across
// two requests, and stop.
func TestRealServices(t *testing.T) {
	redis, err := StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Stop()
	rl, err := StartRateLimit(redis.Addr, "domain: test\ndescriptors:\n  - key: consumer\n    rate_limit: {unit: hour, requests_per_unit: 10}\n")
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Stop()
	ask := func(hits int) (int, string) {
		body := `{"domain":"test","descriptors":[{"entries":[{"key":"consumer","value":"a"}],"hits_addend":` + string(rune('0'+hits)) + `}]}`
		resp, err := http.Post("http://"+rl.Addr+"/json", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r struct{ OverallCode string }
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return resp.StatusCode, r.OverallCode
	}
	if code, overall := ask(6); code != 200 || overall != "OK" {
		t.Fatalf("first: %d %s", code, overall)
	}
	if code, overall := ask(6); code != 429 || overall != "OVER_LIMIT" {
		t.Fatalf("second: %d %s, want over the limit of 10", code, overall)
	}
}
