package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the servers' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-openai-port=0", "-azure-openai-port=0", "-azure-ai-port=0", "-eternalai-port=0",
			"-openai-key=k1", "-azure-openai-deployments=dep"}, outW, logs)
		outW.Close()
	}()

	addrs := map[string]string{}
	sc := bufio.NewScanner(outR)
	for len(addrs) < 4 && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "listening" {
			addrs[f[1]] = f[2]
		}
	}
	go io.Copy(io.Discard, outR)
	if len(addrs) != 4 {
		t.Fatalf("listening lines: %v", addrs)
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+addrs["openai"]+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer k1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "echo: hi") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp, err = http.Post("http://"+addrs["azure-openai"]+"/openai/deployments/other/chat/completions?api-version=2024-10-21",
		"application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 { // default key mock-azure-openai-key was not sent
		t.Errorf("azure-openai without key: %d", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
	if l := logs.String(); !strings.Contains(l, "openai POST /v1/chat/completions 200") ||
		!strings.Contains(l, "azure-openai POST /openai/deployments/other/chat/completions?api-version=2024-10-21 401") {
		t.Errorf("logs:\n%s", l)
	}
}

func TestRunRejectsBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	err = run(context.Background(), []string{"-openai-port=0", "-azure-openai-port=" + port}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "azure-openai") {
		t.Errorf("run on a busy port: %v", err)
	}
}
