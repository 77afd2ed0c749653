package envoyconfig_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The deployment files of the token budgets (ratelimit/): the rate-limit service's configuration, its
// Kubernetes manifests with Redis, and the Envoy cluster the filter's callouts go to.

// rateLimitConfig is the rate-limit service's configuration schema (envoyproxy/ratelimit's
// src/config/config_impl.go), strict: a misspelt key is an error here, where the service would ignore it.
type rateLimitConfig struct {
	Domain      string                `json:"domain"`
	Descriptors []rateLimitDescriptor `json:"descriptors"`
}

type rateLimitDescriptor struct {
	Key         string                `json:"key"`
	Value       string                `json:"value,omitempty"`
	RateLimit   *rateLimitLimit       `json:"rate_limit,omitempty"`
	Descriptors []rateLimitDescriptor `json:"descriptors,omitempty"`
	ShadowMode  bool                  `json:"shadow_mode,omitempty"`
}

type rateLimitLimit struct {
	Unit            string `json:"unit"`
	RequestsPerUnit uint64 `json:"requests_per_unit"`
	Unlimited       bool   `json:"unlimited,omitempty"`
}

func checkRateLimitConfig(data []byte) (rateLimitConfig, error) {
	var c rateLimitConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, err
	}
	if c.Domain != "aidialect" {
		return c, fmt.Errorf("domain %q, want aidialect (the filter's budgets.domain default)", c.Domain)
	}
	var check func(path string, ds []rateLimitDescriptor) error
	check = func(path string, ds []rateLimitDescriptor) error {
		for i, d := range ds {
			p := fmt.Sprintf("%s[%d]", path, i)
			if d.Key != "consumer" && d.Key != "model" {
				return fmt.Errorf("%s: key %q is no descriptor the filter sends (consumer, model)", p, d.Key)
			}
			if d.RateLimit != nil {
				switch strings.ToLower(d.RateLimit.Unit) {
				case "second", "minute", "hour", "day", "week", "month", "year":
				default:
					return fmt.Errorf("%s: unit %q", p, d.RateLimit.Unit)
				}
			}
			if err := check(p+".descriptors", d.Descriptors); err != nil {
				return err
			}
		}
		return nil
	}
	return c, check("descriptors", c.Descriptors)
}

func TestRateLimitDeployment(t *testing.T) {
	shipped, err := os.ReadFile("ratelimit/ratelimit-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := checkRateLimitConfig(shipped)
	if err != nil {
		t.Fatalf("ratelimit-config.yaml: %v", err)
	}

	raw, err := os.ReadFile("ratelimit/kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var configMap *corev1.ConfigMap
	deployments := map[string]*appsv1.Deployment{}
	services := map[string]*corev1.Service{}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ConfigMap":
			configMap = &corev1.ConfigMap{}
			err = yaml.UnmarshalStrict(doc, configMap)
		case "Deployment":
			d := &appsv1.Deployment{}
			err = yaml.UnmarshalStrict(doc, d)
			deployments[d.Name] = d
		case "Service":
			s := &corev1.Service{}
			err = yaml.UnmarshalStrict(doc, s)
			services[s.Name] = s
		default:
			t.Fatalf("unexpected kind %q", meta.Kind)
		}
		if err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
	}
	if configMap == nil {
		t.Fatal("no ConfigMap")
	}
	inMap, err := checkRateLimitConfig([]byte(configMap.Data["aidialect.yaml"]))
	if err != nil {
		t.Fatalf("the ConfigMap's configuration: %v", err)
	}
	if a, b := mustJSON(t, inMap), mustJSON(t, cfg); a != b {
		t.Errorf("the ConfigMap's configuration differs from ratelimit-config.yaml:\n%v\n%v", inMap, cfg)
	}
	rl, redis := deployments["ratelimit"], deployments["ratelimit-redis"]
	if rl == nil || redis == nil || services["ratelimit"] == nil || services["ratelimit-redis"] == nil {
		t.Fatalf("deployments %v, services %v: want ratelimit and ratelimit-redis of each", deployments, services)
	}
	c := rl.Spec.Template.Spec.Containers[0]
	// The image is the commit the tests build the service from.
	src, err := os.ReadFile("../internal/services/services.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`RateLimitVersion = "v[^"]*-([0-9a-f]{12})"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("internal/services.RateLimitVersion not found")
	}
	if want := "envoyproxy/ratelimit:" + string(m[1][:8]); c.Image != want {
		t.Errorf("image %q, want %q (the version the tests run)", c.Image, want)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["REDIS_URL"] != "ratelimit-redis:6379" || env["RUNTIME_ROOT"] != "/data" || env["RUNTIME_SUBDIRECTORY"] != "ratelimit" {
		t.Errorf("env %v: the service must find Redis and its configuration", env)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/data/ratelimit/config" {
		t.Errorf("the configuration is mounted at %v, want /data/ratelimit/config", c.VolumeMounts)
	}
	http := false
	for _, p := range services["ratelimit"].Spec.Ports {
		http = http || p.Port == 8080
	}
	if !http {
		t.Error("the ratelimit Service does not expose the HTTP port 8080 (the filter's /json)")
	}

	snippet, err := os.ReadFile("ratelimit/envoy-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var parts struct {
		Cluster json.RawMessage `json:"cluster"`
		Budgets json.RawMessage `json:"budgets"`
	}
	js, err := yaml.YAMLToJSONStrict(snippet)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &parts); err != nil {
		t.Fatal(err)
	}
	var cluster clusterv3.Cluster
	if err := unmarshalProto(parts.Cluster, &cluster); err != nil {
		t.Fatalf("the cluster: %v", err)
	}
	if err := validateAll(&cluster); err != nil {
		t.Fatalf("the cluster: %v", err)
	}
	var budgets struct{ Cluster string }
	if err := json.Unmarshal(parts.Budgets, &budgets); err != nil || budgets.Cluster != cluster.GetName() {
		t.Errorf("budgets %s name cluster %q, the snippet's cluster is %q", parts.Budgets, budgets.Cluster, cluster.GetName())
	}
	// The filter itself checks the budgets object: plugin's TestShippedBudgetsObject.
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
