package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the command as make run does (built, with the compiled filter: AIDIALECT_WASM, else
// ../../../dist/aidialect.wasm) on free ports.

func build(t *testing.T) (exe, wasm string) {
	t.Helper()
	wasm = os.Getenv("AIDIALECT_WASM")
	if wasm == "" {
		wasm = filepath.Join("..", "..", "..", "dist", "aidialect.wasm")
	}
	if _, err := os.Stat(wasm); err != nil {
		t.Fatalf("the filter (make build): %v", err)
	}
	exe = filepath.Join(t.TempDir(), "local")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe, wasm
}

// run starts the command and returns it with its banner (everything up to "Ctrl-C stops everything.").
func run(t *testing.T, exe string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "CONFIG=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	banner := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if sc.Text() == "Ctrl-C stops everything." {
				banner <- b.String()
				io.Copy(io.Discard, stdout)
				return
			}
		}
		banner <- b.String()
	}()
	select {
	case b := <-banner:
		if !strings.Contains(b, "Ctrl-C stops everything.") {
			t.Fatalf("no banner:\n%s\nstderr:\n%s", b, stderr.String())
		}
		return cmd, b
	case <-time.After(3 * time.Minute):
		t.Fatalf("no banner after 3 minutes; stderr:\n%s", stderr.String())
	}
	return nil, ""
}

var urlRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)

func post(url, body string) (int, string, error) {
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("x-aidialect-error"), nil
}

// gone waits until nothing answers at url.
func gone(t *testing.T, url, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, _, err := post(url+"/v1/models", ""); err != nil {
			return
		}
	}
	t.Errorf("%s still answers at %s", what, url)
}

// The demo: the banner names the filter file and the second gateway, whose misspelt-model curl gets
// model_not_found while the first gateway echoes; Ctrl-C (SIGINT) stops both.
func TestDemoRunsTwoGatewaysAndStopsBoth(t *testing.T) {
	exe, wasm := build(t)
	cmd, banner := run(t, exe, "-wasm", wasm, "-listen", "127.0.0.1:0", "-no-default-listen", "127.0.0.1:0")
	abs, _ := filepath.Abs(wasm)
	if !strings.Contains(banner, "filter: "+abs+" (make run builds it there, in this working tree)") {
		t.Errorf("the banner does not name the filter file:\n%s", banner)
	}
	urls := urlRE.FindAllString(banner, -1)
	main := urls[0]
	var second string
	for _, line := range strings.Split(banner, "\n") {
		if strings.Contains(line, "serves the same demo without default_provider") {
			second = urlRE.FindString(line)
		}
	}
	if second == "" || second == main {
		t.Fatalf("no second gateway in the banner:\n%s", banner)
	}
	if !strings.Contains(banner, "curl -si '"+second+"/v1/chat/completions'") {
		t.Errorf("no curl against the second gateway:\n%s", banner)
	}
	const misspelt = `{"model":"gpt-4o-mnii","messages":[{"role":"user","content":"hi"}]}`
	if status, code, err := post(second+"/v1/chat/completions", misspelt); err != nil || status != 404 || code != "model_not_found" {
		t.Errorf("second gateway: %d %q %v", status, code, err)
	}
	if status, _, err := post(main+"/v1/chat/completions", misspelt); err != nil || status != 200 {
		t.Errorf("first gateway: %d %v (default_provider echoes)", status, err)
	}

	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("SIGINT did not stop make run's gateway")
	}
	gone(t, main, "the gateway")
	gone(t, second, "the gateway without default_provider")
}

// Killed outright, the parent cannot stop its child: the child stops by itself when its stdin closes.
func TestSecondGatewayStopsWithAKilledParent(t *testing.T) {
	exe, wasm := build(t)
	cmd, banner := run(t, exe, "-wasm", wasm, "-listen", "127.0.0.1:0", "-no-default-listen", "127.0.0.1:0")
	var second string
	for _, line := range strings.Split(banner, "\n") {
		if strings.Contains(line, "serves the same demo without default_provider") {
			second = urlRE.FindString(line)
		}
	}
	if second == "" {
		t.Fatalf("no second gateway:\n%s", banner)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	gone(t, second, "the orphaned gateway without default_provider")
}

// With -config: the configured models and their curls, no demo, no second gateway.
func TestConfigBanner(t *testing.T) {
	exe, wasm := build(t)
	config := filepath.Join(t.TempDir(), "my.json")
	os.WriteFile(config, []byte(`{"providers":[{"name":"east","dialect":"azure-openai","host":"res.openai.azure.com","api_key_env":"LOCAL_TEST_KEY",
	  "models":[{"name":"gpt-4.1","deployment":"gpt41"}]}]}`), 0o600)
	t.Setenv("LOCAL_TEST_KEY", "k")
	cmd, banner := run(t, exe, "-wasm", wasm, "-listen", "127.0.0.1:0", "-config", config)
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Logf("exit: %v", err)
		}
	}()
	for _, want := range []string{"east (azure-openai) gpt-4.1", "/openai/deployments/gpt-4.1/chat/completions?api-version=", "no-such-model"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	for _, demo := range []string{"gpt-4o-mini", "intellect-1", "without default_provider:", "mock"} {
		if strings.Contains(banner, demo) {
			t.Errorf("banner shows the demo's %q:\n%s", demo, banner)
		}
	}
}
