// Command mockproviders serves the four strict mock providers of package
// github.com/aidialect/aidialect/e2e/mock on 127.0.0.1, one port each, logging one line per request.
//
//	go run ./cmd/mockproviders [-openai-port 18081] [-azure-openai-port 18082] [-azure-ai-port 18083]
//	    [-eternalai-port 18084] [-<dialect>-key K] [-<dialect>-models a,b] [-azure-{openai,ai}-deployments a,b]
//	    [-<dialect>-base-path P] [-azure-openai-bearer]
//
// Keys default to $MOCK_OPENAI_KEY, $MOCK_AZURE_OPENAI_KEY, $MOCK_AZURE_AI_KEY, $MOCK_ETERNALAI_KEY, else
// "mock-<dialect>-key". Port 0 picks a free port; each provider prints "listening <dialect> <addr>" on
// stdout once it accepts connections. SIGINT or SIGTERM stops the servers cleanly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aidialect/aidialect/e2e/mock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "mockproviders:", err)
		os.Exit(1)
	}
}

// providerFlags are one dialect's settings.
type providerFlags struct {
	dialect                            string
	port                               *int
	key, models, deployments, basePath *string
	bearer                             *bool
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// run serves until ctx ends; it returns once every server has stopped.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mockproviders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "127.0.0.1", "address to listen on")
	var pfs []providerFlags
	for i, d := range mock.Dialects {
		env := "MOCK_" + strings.ToUpper(strings.ReplaceAll(d, "-", "_")) + "_KEY"
		defKey := os.Getenv(env)
		if defKey == "" {
			defKey = "mock-" + d + "-key"
		}
		pf := providerFlags{
			dialect:  d,
			port:     fs.Int(d+"-port", 18081+i, d+" port (0: any free port)"),
			key:      fs.String(d+"-key", defKey, d+" API key (default from $"+env+")"),
			models:   fs.String(d+"-models", "", d+" accepted body models, comma-separated (empty: any)"),
			basePath: fs.String(d+"-base-path", "", d+" base path (empty: the dialect's default)"),
		}
		if d == mock.AzureOpenAI || d == mock.AzureAI {
			pf.deployments = fs.String(d+"-deployments", "", d+" existing deployments, comma-separated (empty: any)")
		}
		if d == mock.AzureOpenAI {
			pf.bearer = fs.Bool(d+"-bearer", false, "azure-openai expects Authorization: Bearer instead of api-key")
		}
		pfs = append(pfs, pf)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)

	var servers []*http.Server
	var listeners []net.Listener
	for _, pf := range pfs {
		opts := mock.Options{
			APIKey:   *pf.key,
			BasePath: *pf.basePath,
			Models:   splitList(*pf.models),
		}
		if pf.deployments != nil {
			opts.Deployments = splitList(*pf.deployments)
		}
		if pf.bearer != nil {
			opts.Bearer = *pf.bearer
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(*host, fmt.Sprint(*pf.port)))
		if err != nil {
			for _, l := range listeners {
				_ = l.Close()
			}
			return fmt.Errorf("%s: %w", pf.dialect, err)
		}
		listeners = append(listeners, ln)
		servers = append(servers, &http.Server{
			Handler:           logRequests(logger, pf.dialect, mock.New(pf.dialect, opts)),
			ReadHeaderTimeout: 10 * time.Second,
		})
	}

	errs := make(chan error, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		fmt.Fprintf(stdout, "listening %s %s\n", pfs[i].dialect, listeners[i].Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("%s: %w", pfs[i].dialect, err)
			}
		}()
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	logger.Printf("stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	wg.Wait()
	logger.Printf("stopped")
	return err
}

// statusWriter remembers the status and size of a response; it keeps Flush reachable through Unwrap.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// logRequests logs one line per request: dialect, method, path and query, status, bytes, duration, and the
// x-mock-fail injection if any.
func logRequests(logger *log.Logger, dialect string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		target := r.URL.Path
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		fail := ""
		if f := r.Header.Get("x-mock-fail"); f != "" {
			fail = " x-mock-fail=" + f
		}
		logger.Printf("%s %s %s %d %dB %s%s", dialect, r.Method, target, sw.status, sw.bytes,
			time.Since(start).Round(time.Microsecond), fail)
	})
}
