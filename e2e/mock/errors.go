package mock

import (
	"fmt"
	"net/http"
	"strconv"
)

// Error shapes (docs/dialects.md):
//   openai, eternalai      {"error":{"message","type","param","code"}}  (EternalAI's are unknown: OpenAI's)
//   azure-openai           {"error":{"code":"<string>","message"}} for gateway errors (route, version, key,
//                          deployment, rate limit); the OpenAI envelope for body validation
//   azure-ai               {"error":{"code","message","status"}} for 400s, the flat {"error","message","status"}
//                          for 401/404/429 and {"status","code","detail","message"} for 422; always x-ms-error-code

// writeError writes an error body with Content-Type application/json; failure modes never touch it.
func (c *call) writeError(status int, body any, headers ...string) {
	b := marshal(body)
	h := c.w.Header()
	c.commonHeaders()
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(b)
}

// nullable turns "" into JSON null.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// openaiErr writes the OpenAI envelope.
func (c *call) openaiErr(status int, typ, message, param, code string, headers ...string) {
	c.writeError(status, obj{{"error", obj{
		{"message", message}, {"type", typ}, {"param", nullable(param)}, {"code", nullable(code)},
	}}}, headers...)
}

// azureErr writes Azure OpenAI's gateway form, whose code is a string.
func (c *call) azureErr(status int, code, message string, headers ...string) {
	c.writeError(status, obj{{"error", obj{{"code", code}, {"message", message}}}}, headers...)
}

// aiErr writes Azure AI's enveloped form with x-ms-error-code.
func (c *call) aiErr(status int, code, message string) {
	c.writeError(status, obj{{"error", obj{{"code", code}, {"message", message}, {"status", status}}}},
		"x-ms-error-code", code)
}

// aiFlat writes Azure AI's flat form {"error":name,"message","status"} with x-ms-error-code.
func (c *call) aiFlat(status int, name, message, msCode string) {
	c.writeError(status, obj{{"error", name}, {"message", message}, {"status", status}}, "x-ms-error-code", msCode)
}

// aiUnprocessable writes Azure AI's documented 422 form.
func (c *call) aiUnprocessable(code string, loc []string, input any) {
	c.writeError(http.StatusUnprocessableEntity, obj{
		{"status", 422}, {"code", code},
		{"detail", obj{{"loc", loc}, {"input", input}}},
		{"message", "One of the parameters contain invalid values."},
	}, "x-ms-error-code", code)
}

// invalid writes a 400 body-validation error in the dialect's shape.
func (c *call) invalid(param, code, message string) {
	if c.dialect() == AzureAI {
		c.aiErr(http.StatusBadRequest, "BadRequest", message)
		return
	}
	c.openaiErr(http.StatusBadRequest, "invalid_request_error", message, param, code)
}

// unrecognized is OpenAI's answer to an unknown argument.
func (c *call) unrecognized(field string) bool {
	c.invalid("", "", "Unrecognized request argument supplied: "+field)
	return false
}

func (c *call) errRouteNotFound() {
	switch c.dialect() {
	case OpenAI, EternalAI:
		c.openaiErr(http.StatusNotFound, "invalid_request_error",
			fmt.Sprintf("Invalid URL (%s %s)", c.r.Method, c.r.URL.Path), "", "")
	case AzureOpenAI:
		c.azureErr(http.StatusNotFound, "404", "Resource not found")
	case AzureAI:
		c.aiFlat(http.StatusNotFound, "NotFound", "Resource not found", "NotFound")
	}
}

func (c *call) errUnauthorized() {
	const azureMsg = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	switch c.dialect() {
	case OpenAI, EternalAI:
		msg := "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
		if !bearerOf(c.r).present {
			msg = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
		}
		c.openaiErr(http.StatusUnauthorized, "invalid_request_error", msg, "", "invalid_api_key")
	case AzureOpenAI:
		c.azureErr(http.StatusUnauthorized, "401", azureMsg)
	case AzureAI:
		c.aiFlat(http.StatusUnauthorized, "Unauthorized", azureMsg, "Unauthorized")
	}
}

func (c *call) errDeploymentNotFound() {
	c.azureErr(http.StatusNotFound, "DeploymentNotFound", "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.")
}

func (c *call) errModelNotFound(model string) {
	c.openaiErr(http.StatusNotFound, "invalid_request_error",
		fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), "", "model_not_found")
}

// errInjectedNotFound is x-mock-fail: 404, the dialect's "no such model or deployment".
func (c *call) errInjectedNotFound() {
	switch c.dialect() {
	case OpenAI, EternalAI:
		c.errModelNotFound("mock-missing-model")
	case AzureOpenAI:
		c.errDeploymentNotFound()
	case AzureAI:
		c.aiFlat(http.StatusNotFound, "NotFound", "The requested modality is not supported by the model.", "NotFound")
	}
}

// errUnprocessable is x-mock-fail: 422 (Azure AI's unsupported-parameter answer; 400 elsewhere).
func (c *call) errUnprocessable() {
	if c.dialect() == AzureAI {
		c.aiUnprocessable("parameter_not_supported", []string{"body", "response_format"}, "json_object")
		return
	}
	c.openaiErr(http.StatusBadRequest, "invalid_request_error",
		"Invalid parameter: 'response_format' of type 'json_object' is not supported with this model.",
		"response_format", "")
}

// errOverloaded is x-mock-fail: 503, the provider overloaded (mock: one JSON shape for every dialect, the
// one OpenAI's servers use).
func (c *call) errOverloaded() {
	c.openaiErr(http.StatusServiceUnavailable, "server_error", "The server is overloaded or not ready yet.", "", "")
}

// errRateLimited is x-mock-fail: 429, with Retry-After: 2; 429-brief asks for 1 ms (retry-after-ms: 1,
// Retry-After: 0), so that a test can check how a client sees a 429 without the gateway benching the provider
// for the tests after it.
func (c *call) errRateLimited() {
	seconds, millis := "2", "2000"
	if c.fail == "429-brief" {
		seconds, millis = "0", "1"
	}
	switch c.dialect() {
	case OpenAI, EternalAI:
		c.openaiErr(http.StatusTooManyRequests, "requests",
			"Rate limit reached for requests in organization org-mock on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 2s.",
			"", "rate_limit_exceeded",
			"Retry-After", seconds, "retry-after-ms", millis, "x-ratelimit-limit-requests", "3", "x-ratelimit-remaining-requests", "0",
			"x-ratelimit-reset-requests", seconds+"s")
	case AzureOpenAI:
		c.azureErr(http.StatusTooManyRequests, "429",
			"Requests to the "+map[operation]string{opChat: "ChatCompletions_Create", opCompletions: "Completions_Create",
				opEmbeddings: "Embeddings_Create", opResponses: "Responses_Create"}[c.op]+" Operation under Azure OpenAI API version "+c.versionOr("2024-10-21")+
				" have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 2 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
			"Retry-After", seconds, "retry-after-ms", millis, "x-ratelimit-remaining-requests", "0",
			"x-ratelimit-remaining-tokens", "0")
	case AzureAI:
		c.writeError(http.StatusTooManyRequests, obj{{"error", "Too Many Requests"},
			{"message", "Rate limit is exceeded. Try again in 2 seconds."}, {"status", 429}},
			"x-ms-error-code", "TooManyRequests", "Retry-After", seconds, "retry-after-ms", millis)
	}
}

// errContextLength is x-mock-fail: context-length, the request longer than the model's context window, as
// each provider says it: OpenAI and Azure OpenAI by code, Azure AI's hosted models (vLLM behind the
// inference API) and EternalAI's in the message only.
func (c *call) errContextLength() {
	const vllm = "This model's maximum context length is 8192 tokens. However, you requested 9216 tokens (9000 in the messages, 216 in the completion). Please reduce the length of the messages or completion."
	switch c.dialect() {
	case OpenAI, AzureOpenAI:
		c.openaiErr(http.StatusBadRequest, "invalid_request_error",
			"This model's maximum context length is 128000 tokens. However, your messages resulted in 130012 tokens. Please reduce the length of the messages.",
			"messages", "context_length_exceeded")
	case AzureAI:
		c.aiErr(http.StatusBadRequest, "Invalid input", vllm)
	default:
		c.openaiErr(http.StatusBadRequest, "BadRequestError", vllm, "", "")
	}
}

func (c *call) versionOr(def string) string {
	if v := c.r.URL.Query().Get("api-version"); datedVersion.MatchString(v) {
		return v
	}
	return def
}

func (c *call) errTooLarge() {
	const msg = "mock: the request body is larger than the 16 MiB the mock accepts"
	switch c.dialect() {
	case AzureAI:
		c.aiErr(http.StatusRequestEntityTooLarge, "PayloadTooLarge", msg)
	default:
		c.openaiErr(http.StatusRequestEntityTooLarge, "invalid_request_error", msg, "", "")
	}
}

// nginx502 is what a load balancer in front of any of the services answers when its backend fails.
const nginx502 = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

func (c *call) errBadGatewayHTML() {
	h := c.w.Header()
	h.Set("Content-Type", "text/html")
	h.Set("Server", "nginx")
	h.Set("Content-Length", strconv.Itoa(len(nginx502)))
	c.w.WriteHeader(http.StatusBadGateway)
	_, _ = c.w.Write([]byte(nginx502))
}
