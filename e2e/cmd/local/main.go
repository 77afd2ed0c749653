// Command local is what `make run` starts: the local gateway running dist/aidialect.wasm in front of the four
// mock providers (or, with -config, in front of the real providers the configuration names).
//
//	go run ./cmd/local -wasm ../dist/aidialect.wasm [-listen 127.0.0.1:8080] [-config my-config.json]
//
// With the demo it also starts a second gateway, on -no-default-listen (127.0.0.1:8081), serving the demo
// without default_provider, where a misspelt model gets 404 model_not_found. That gateway is a child process
// (this program with -no-default -child): the emulator hosting the filter allows one per process. The child
// stops when this process does, even when this one is killed: it watches its standard input, which this
// process holds open.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aidialect/aidialect/e2e/demo"
	"github.com/aidialect/aidialect/internal/services"
)

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "local: "+format+"\n", args...)
	os.Exit(1)
}

// pairFlag is a repeatable name=value flag.
type pairFlag map[string]string

func (p pairFlag) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" || value == "" {
		return fmt.Errorf("%q is not name=value", v)
	}
	if _, dup := p[name]; dup {
		return fmt.Errorf("%s given twice", name)
	}
	p[name] = value
	return nil
}

// readyPrefix starts the line a child writes on its standard output once it serves.
const readyPrefix = "aidialect-local-ready "

func main() {
	wasmPath := flag.String("wasm", "../dist/aidialect.wasm", "compiled filter (make build)")
	listen := flag.String("listen", "127.0.0.1:8080", "gateway address")
	admin := flag.String("admin", "127.0.0.1:9901", "address of the admin page serving the filter's metrics as Envoy's does (/stats/prometheus; \"\": none)")
	configPath := flag.String("config", os.Getenv("CONFIG"), "filter configuration for real providers (default: the demo with mock providers); api_key_env is read from this process's environment")
	noDefaultListen := flag.String("no-default-listen", "127.0.0.1:8081", "with the demo, address of a second gateway serving it without default_provider (\"\": none)")
	noDefault := flag.Bool("no-default", false, "serve the demo without default_provider (what the second gateway runs)")
	headersTimeout := flag.Duration("headers-timeout", 0, "how long a provider may take to answer with its headers before the gateway answers 504 "+
		"as Envoy's per_try_idle_timeout does, which the filter fails over (0: 5s for the demo, 300s with -config as in envoy/envoy.yaml; negative: no limit)")
	child := flag.Bool("child", false, "run as the second gateway of a parent: report readiness on stdout, stop when stdin closes")
	consumers := pairFlag{}
	flag.Var(consumers, "consumer", "with the demo, a consumer as name=key (repeat the flag for more): every request then needs one of the keys")
	budgets := flag.Bool("budgets", false, "with the demo, token budgets on: starts Redis (Debian's redis-server) and Envoy's rate-limit service (built from its module the first time) on loopback ports")
	rateLimit := flag.String("ratelimit", "", "with the demo, token budgets on, counted by the rate-limit service at this base URL (e.g. another gateway's, to watch two replicas share one budget)")
	upstreams := pairFlag{}
	flag.Var(upstreams, "upstream", "with -config, a provider's traffic sent to a base URL instead of https to its host, as name=URL "+
		"(repeat the flag; e.g. the mocks of go run ./cmd/mockproviders: openai=http://127.0.0.1:18081)")
	flag.Parse()
	if len(consumers) > 0 && *configPath != "" {
		fatalf("-consumer adds consumers to the demo; with -config, put them in your configuration's \"consumers\" (key_sha256: printf %%s \"$KEY\" | sha256sum)")
	}
	if len(upstreams) > 0 && *configPath == "" {
		fatalf("-upstream redirects a provider of your -config; the demo already sends every provider to its mock")
	}
	if (*budgets || *rateLimit != "") && *configPath != "" {
		fatalf("-budgets and -ratelimit turn the demo's budgets on; with -config, put \"budgets\" in your configuration and -upstream ratelimit=<the service's URL>")
	}
	// proxytest narrates every host call through the standard logger; the gateway logs through its own.
	log.SetOutput(io.Discard)

	wasm, err := os.ReadFile(*wasmPath)
	if err != nil {
		fatalf("reading the filter: %v (run make build first)", err)
	}
	prefix := "gateway: "
	if *noDefault {
		prefix = "gateway (no default_provider): "
	}
	opts := demo.Options{Wasm: wasm, Listen: *listen, NoDefault: *noDefault, Logger: log.New(os.Stderr, prefix, log.LstdFlags),
		Consumers: consumers, Upstreams: upstreams, RateLimitURL: *rateLimit, HeadersTimeout: *headersTimeout}
	if !*child {
		opts.AdminListen = *admin
	}
	stopServices := func() {} // fatalf exits without running deferred calls
	if *budgets && opts.RateLimitURL == "" {
		redis, err := services.StartRedis()
		if err != nil {
			fatalf("%v", err)
		}
		stopServices = redis.Stop
		defer redis.Stop()
		fmt.Println("budgets: building (the first time) and starting Envoy's rate-limit service, its counters in Redis on " + redis.Addr)
		rl, err := services.StartRateLimit(redis.Addr, demo.RateLimitConfig)
		if err != nil {
			redis.Stop()
			fatalf("%v", err)
		}
		stopServices = func() { rl.Stop(); redis.Stop() }
		defer rl.Stop()
		opts.RateLimitURL = "http://" + rl.Addr
	}
	if *configPath != "" {
		if opts.Config, err = os.ReadFile(*configPath); err != nil {
			fatalf("reading the configuration: %v", err)
		}
	}
	env, err := demo.Start(opts)
	if err != nil {
		stopServices()
		fatalf("starting: %v", err)
	}
	defer env.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *child {
		fmt.Println(readyPrefix + env.GatewayURL)
		go func() {
			io.Copy(io.Discard, os.Stdin) // returns when the parent closes it, or exits
			stop()
		}()
		<-ctx.Done()
		return
	}

	if env.Demo() && !*noDefault && *noDefaultListen != "" {
		c, err := startNoDefault(*wasmPath, *noDefaultListen, consumers, *headersTimeout)
		if err != nil {
			fmt.Fprintf(os.Stderr, "local: the gateway without default_provider did not start (%v); going on without it\n", err)
		} else {
			defer c.stop()
			env.NoDefaultURL = c.url
		}
	}
	if abs, err := filepath.Abs(*wasmPath); err == nil {
		fmt.Printf("filter: %s (make run builds it there, in this working tree)\n", abs)
	}
	fmt.Print(env.Describe())
	<-ctx.Done()
	fmt.Println("\nstopping")
}

// childGateway is the second gateway's process.
type childGateway struct {
	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}
	url   string
}

// startNoDefault runs this program again as the gateway without default_provider and waits until it serves.
func startNoDefault(wasmPath, listen string, consumers pairFlag, headersTimeout time.Duration) (*childGateway, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-wasm", wasmPath, "-listen", listen, "-no-default", "-child", "-headers-timeout", headersTimeout.String()}
	for name, key := range consumers {
		args = append(args, "-consumer", name+"="+key)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childGateway{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	ready := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				select {
				case ready <- url:
				default: // only the first one counts
				}
			}
		}
		close(ready)
	}()
	go func() {
		<-scanned // os/exec: Wait closes the pipe, so it must come after the last read
		cmd.Wait()
		close(c.done)
	}()
	select {
	case url, ok := <-ready:
		if ok {
			c.url = url
			return c, nil
		}
		c.stop()
		return nil, errors.New("it exited (see its message above)")
	case <-time.After(2 * time.Minute):
		c.stop()
		return nil, errors.New("not ready after 2 minutes")
	}
}

// stop closes the child's standard input, which stops it, and kills it if it lingers.
func (c *childGateway) stop() {
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}
