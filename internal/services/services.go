// Package services starts the real services the token budgets rely on, on loopback ports, for the tests and
// for make run's budget demo: a Redis server (Debian's redis-server) and Envoy's global rate-limit service
// (github.com/envoyproxy/ratelimit), built from its Go module at a pinned version the first time and kept
// under the repository's .cache/bin.
package services

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimitModule is the rate-limit service's module at the version the project tests against (the newest
// the Go module proxy served when budgets were built; the service tags no releases).
const (
	RateLimitModule  = "github.com/envoyproxy/ratelimit"
	RateLimitVersion = "v1.4.1-0.20260122083618-3fb702589d36"
	rateLimitPackage = RateLimitModule + "/src/service_cmd"
)

// ErrNoRedis says what to install when redis-server is missing: the budget tests never skip.
var ErrNoRedis = errors.New("redis-server is not installed: the token budget tests and make run's budget demo run a real Redis; install Debian's redis-server package (apt-get install redis-server; .ci/run does)")

// Process is a service started for the caller, stopped by Stop.
type Process struct {
	Addr string // host:port it serves on (the rate-limit service: its HTTP port, /json)
	cmd  *exec.Cmd
	done chan struct{}
	log  *tailBuffer
}

// Stop ends the process and waits for it.
func (p *Process) Stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Log is the end of what the process wrote, for a failure message.
func (p *Process) Log() string { return p.log.String() }

// FreePort is a loopback port nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartRedis starts redis-server on a free loopback port, without persistence.
func StartRedis() (*Process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	p, err := start(exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"))
	if err != nil {
		return nil, err
	}
	p.Addr = "127.0.0.1:" + strconv.Itoa(port)
	if err := waitFor(p, func() bool { return redisPing(p.Addr) }); err != nil {
		p.Stop()
		return nil, fmt.Errorf("redis-server did not answer PING on %s: %w\n%s", p.Addr, err, p.Log())
	}
	return p, nil
}

func redisPing(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// RateLimitBinary is the rate-limit service's binary: $AIDIALECT_RATELIMIT_BIN, else built once with go
// install (a minute; the module cache keeps its sources) into the repository's .cache/bin.
func RateLimitBinary() (string, error) {
	if p := os.Getenv("AIDIALECT_RATELIMIT_BIN"); p != "" {
		return p, nil
	}
	buildOnce.Do(func() { built, buildErr = build() })
	return built, buildErr
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

func build() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "bin")
	bin := filepath.Join(dir, "ratelimit-"+RateLimitVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp, err := os.MkdirTemp("", "aidialect-ratelimit-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", rateLimitPackage+"@"+RateLimitVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the rate-limit service (go install %s@%s): %v\n%s", rateLimitPackage, RateLimitVersion, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "service_cmd"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// repoRoot is the directory holding the root go.mod (module github.com/aidialect/aidialect).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/aidialect/aidialect\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the aidialect repository")
		}
		dir = parent
	}
}

// StartRateLimit runs the rate-limit service on free loopback ports with the given configuration (the
// service's YAML: a domain and its descriptors), its counters in the Redis at redisAddr. Its HTTP port
// (Process.Addr) serves /json.
func StartRateLimit(redisAddr, configYAML string) (*Process, error) {
	bin, err := RateLimitBinary()
	if err != nil {
		return nil, err
	}
	runtime, err := os.MkdirTemp("", "aidialect-ratelimit-config-")
	if err != nil {
		return nil, err
	}
	confDir := filepath.Join(runtime, "ratelimit", "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(confDir, "aidialect.yaml"), []byte(configYAML), 0o644); err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr,
		"RUNTIME_ROOT="+runtime, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"USE_STATSD=false", "LOG_LEVEL=warn",
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(ports[0]),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(ports[1]),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(ports[2]))
	p, err := start(cmd)
	if err != nil {
		os.RemoveAll(runtime)
		return nil, err
	}
	p.Addr = "127.0.0.1:" + strconv.Itoa(ports[0])
	cleanup := p.done
	go func() {
		<-cleanup
		os.RemoveAll(runtime)
	}()
	if err := waitFor(p, func() bool { return healthy("http://" + p.Addr + "/healthcheck") }); err != nil {
		p.Stop()
		return nil, fmt.Errorf("the rate-limit service did not become healthy on %s: %w\n%s", p.Addr, err, p.Log())
	}
	return p, nil
}

func healthy(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func start(cmd *exec.Cmd) (*Process, error) {
	buf := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{}), log: buf}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitFor polls ready for up to 30 s, failing early when the process exits.
func waitFor(p *Process, ready func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return errors.New("it exited")
		default:
		}
		if ready() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("not ready after 30 s")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
