package main

import (
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

	"github.com/aidialect/aidialect/translate"
)

// OpenTelemetry's semantic conventions for generative AI clients, as Envoy histograms beside the Prometheus
// counters: gen_ai.client.token.usage (by gen_ai.token.type), gen_ai.client.operation.duration, and the time
// to a stream's first chunk. Each carries gen_ai.operation.name, gen_ai.request.model (the configured model
// entry's name, as the other metrics label it) and gen_ai.provider.name with the conventions' registry values
// (genAIProviders). Envoy histograms hold integers, so durations are in milliseconds, which the names say
// (the conventions' unit is seconds: an OpenTelemetry stats sink can rename and scale them). The attributes
// ride in the name as ".attribute.value" pairs, the provider last (its value has dots), and the shipped
// stats_tags extract them (envoy/envoy.yaml).
const (
	metricGenAITokens     = "gen_ai_client_token_usage"
	metricGenAIDuration   = "gen_ai_client_operation_duration_ms"
	metricGenAIFirstChunk = "gen_ai_client_time_to_first_chunk_ms"
)

// genAIProviders are gen_ai.provider.name by dialect: the registry's values; EternalAI, not in the registry,
// gets its own name, as the conventions ask of systems they do not list.
var genAIProviders = [translate.DialectLimit]string{
	translate.OpenAI:      "openai",
	translate.AzureOpenAI: "azure.ai.openai",
	translate.AzureAI:     "azure.ai.inference",
	translate.EternalAI:   "eternalai",
}

// genAIOperations are the operations measured, with their gen_ai.operation.name: a Responses API call is a
// chat turn, as the conventions name it; the others (model lists, token counts, compaction) are not
// generations and are left out.
var genAIOperations = [...]struct {
	op   translate.Operation
	name string
}{
	{translate.OpChatCompletions, "chat"},
	{translate.OpResponses, "chat"},
	{translate.OpCompletions, "text_completion"},
	{translate.OpEmbeddings, "embeddings"},
}

// genAISeries is the histograms of one model entry and operation, defined when first recorded: their number
// is bounded by the configuration (entries times four operations), not by traffic.
type genAISeries struct {
	input, output, duration, firstChunk proxywasm.MetricHistogram
}

// genAI returns the series of a route's entry and an operation (nil when the operation is not measured).
func (m *metrics) genAI(route *modelRoute, op translate.Operation) *genAISeries {
	if m == nil || route.metricID < 0 || route.provider == nil {
		return nil
	}
	k := -1
	for i, o := range genAIOperations {
		if o.op == op {
			k = i
		}
	}
	if k < 0 {
		return nil
	}
	slot := route.metricID*len(genAIOperations) + k
	if slot >= len(m.genAISeries) {
		m.genAISeries = append(m.genAISeries, make([]*genAISeries, slot+1-len(m.genAISeries))...)
	}
	if s := m.genAISeries[slot]; s != nil {
		return s
	}
	attrs := ".gen_ai_operation_name." + genAIOperations[k].name + ".gen_ai_request_model." + route.label
	provider := ".gen_ai_provider_name." + genAIProviders[route.provider.dialect]
	s := &genAISeries{
		input:      m.histogram(metricGenAITokens + attrs + ".gen_ai_token_type.input" + provider),
		output:     m.histogram(metricGenAITokens + attrs + ".gen_ai_token_type.output" + provider),
		duration:   m.histogram(metricGenAIDuration + attrs + provider),
		firstChunk: m.histogram(metricGenAIFirstChunk + attrs + provider),
	}
	m.genAISeries[slot] = s
	return s
}

func (m *metrics) histogram(name string) proxywasm.MetricHistogram {
	m.names = append(m.names, name)
	return proxywasm.DefineHistogramMetric(name)
}

// recordTokens records an answer's usage.
func (s *genAISeries) recordTokens(u translate.Usage) {
	if s == nil || !u.Seen {
		return
	}
	s.input.Record(uint64(max(u.PromptTokens, 0)))
	if u.CompletionTokens > 0 || u.PromptTokens > 0 {
		s.output.Record(uint64(max(u.CompletionTokens, 0)))
	}
}
