// Package goldencase reads the golden cases under testdata/cases, shared by the translate and plugin tests,
// and holds what the filter must make of them (PluginConfig, Want, CheckUpstream, CheckClient), shared by the
// hosts that replay them through the whole filter: plugin's tests (natively and under wazero) and
// internal/v8host (under V8).
//
// A case is a folder: case.json says who talks to whom; client_request.http and upstream_response.http are
// the inputs; upstream_request.http and client_response.http the expected outputs. A request the filter
// answers itself has no upstream_request.http. The .http files are a first line (a request line "METHOD
// PATH", or a status), header lines, a blank line, and the body.
package goldencase

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is the cases folder relative to a package directory one level below the repository root.
const Dir = "../testdata/cases"

// Case is one golden case.
type Case struct {
	Name        string   `json:"-"`
	Dir         string   `json:"-"`
	Description string   `json:"description"`
	PathPrefix  string   `json:"path_prefix,omitempty"`
	OnchainData string   `json:"onchain_data,omitempty"`
	Provider    Provider `json:"provider"`

	ClientRequest    Message `json:"-"`
	UpstreamResponse Message `json:"-"`
}

// Provider is the provider configuration of a case, in the plugin configuration's terms.
type Provider struct {
	Dialect         string `json:"dialect"`
	BasePath        string `json:"base_path,omitempty"`
	APIVersion      string `json:"api_version,omitempty"`
	Deployment      string `json:"deployment,omitempty"`
	Model           string `json:"model,omitempty"`
	ChainID         string `json:"chain_id,omitempty"`
	DefaultChainID  string `json:"default_chain_id,omitempty"`
	ExtraParameters string `json:"extra_parameters,omitempty"`
	Auth            string `json:"auth,omitempty"`
	Key             string `json:"key"`
	// ChatOnly marks the model chat_only: Responses requests to it are bridged to chat completions.
	ChatOnly bool `json:"chat_only,omitempty"`
	// HostedTools is the model's hosted_tools ("drop": a bridged request leaves hosted tools out).
	HostedTools string `json:"hosted_tools,omitempty"`
	// ProviderSettings and ModelSettings are dialect keys of the provider entry and of its models entry
	// without a field above (a new dialect's), written into the configuration as they are.
	ProviderSettings map[string]string `json:"provider_settings,omitempty"`
	ModelSettings    map[string]string `json:"model_settings,omitempty"`
}

// Message is a request or response in the .http text form.
type Message struct {
	First   string
	Headers [][2]string // lower-case names, in file order
	Body    []byte
}

// Header returns the first value of a header ("" when absent).
func (m Message) Header(name string) string {
	for _, h := range m.Headers {
		if h[0] == name {
			return h[1]
		}
	}
	return ""
}

// Load reads every case under dir.
func Load(dir string) ([]Case, error) {
	dirs, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no golden cases under %s", dir)
	}
	var cases []Case
	for _, d := range dirs {
		c, err := LoadCase(d)
		if err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// LoadCase reads one case folder.
func LoadCase(dir string) (Case, error) {
	c := Case{Name: filepath.Base(dir), Dir: dir}
	raw, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		return c, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s/case.json: %w", dir, err)
	}
	if c.ClientRequest, err = ReadMessage(filepath.Join(dir, "client_request.http")); err != nil {
		return c, err
	}
	if c.UpstreamResponse, err = ReadMessage(filepath.Join(dir, "upstream_response.http")); err != nil {
		return c, err
	}
	return c, nil
}

// Expected reads an expected output of the case; ok is false when the file does not exist.
func (c Case) Expected(file string) (m Message, ok bool, err error) {
	path := filepath.Join(c.Dir, file)
	if _, statErr := os.Stat(path); statErr != nil {
		return m, false, nil
	}
	m, err = ReadMessage(path)
	return m, err == nil, err
}

// ReadMessage parses a .http file. Bodies keep their exact bytes for event streams; other bodies lose the
// file's trailing newlines.
func ReadMessage(path string) (Message, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Message{}, err
	}
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	m := Message{First: lines[0], Body: body}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return m, fmt.Errorf("%s: header line without ':': %q", path, l)
		}
		m.Headers = append(m.Headers, [2]string{strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)})
	}
	if !strings.Contains(m.Header("content-type"), "event-stream") {
		m.Body = bytes.TrimRight(m.Body, "\n")
	}
	return m, nil
}

// Render writes the message in the .http form, headers sorted by name.
func (m Message) Render() []byte {
	var b bytes.Buffer
	b.WriteString(m.First + "\n")
	headers := append([][2]string(nil), m.Headers...)
	sort.SliceStable(headers, func(i, j int) bool { return headers[i][0] < headers[j][0] })
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(h[0]), h[1])
	}
	b.WriteString("\n")
	b.Write(m.Body)
	if len(m.Body) > 0 && m.Body[len(m.Body)-1] != '\n' {
		b.WriteString("\n")
	}
	return b.Bytes()
}

// PluginProvider renders the case's provider as one entry of the filter's "providers" configuration, named
// name, at host, serving the models matching modelPattern.
func (p Provider) PluginProvider(name, host, modelPattern string) map[string]any {
	provider := map[string]any{"name": name, "dialect": p.Dialect, "host": host}
	model := map[string]any{"name": modelPattern}
	set := func(m map[string]any, key, value string) {
		if value != "" {
			m[key] = value
		}
	}
	if p.Auth == "passthrough" {
		provider["auth"] = "passthrough"
	} else {
		provider["api_key"] = p.Key
		set(provider, "auth", p.Auth)
	}
	set(provider, "base_path", p.BasePath)
	set(provider, "api_version", p.APIVersion)
	set(provider, "extra_parameters", p.ExtraParameters)
	set(provider, "chain_id", p.DefaultChainID)
	set(model, "model", p.Model)
	set(model, "deployment", p.Deployment)
	set(model, "chain_id", p.ChainID)
	if p.ChatOnly {
		model["chat_only"] = true
	}
	set(model, "hosted_tools", p.HostedTools)
	for key, value := range p.ProviderSettings {
		set(provider, key, value)
	}
	for key, value := range p.ModelSettings {
		set(model, key, value)
	}
	provider["models"] = []any{model}
	return provider
}
