package sse

import (
	"bytes"
	"fmt"
	"testing"
)

// framerBenchStream is a realistic chat completion stream: a role event, content tokens, a finish event, a
// usage event and [DONE], each one LF-terminated data line of about 260 bytes.
func framerBenchStream(events int) []byte {
	const head = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,` +
		`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_f9f4fb6dbf","choices":[{"index":0,`
	var b []byte
	b = append(b, head+`"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n"...)
	for i := range events - 4 {
		b = fmt.Appendf(b, head+`"delta":{"content":" token%d"},"logprobs":null,"finish_reason":null}]}`+"\n\n", i)
	}
	b = append(b, head+`"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`+"\n\n"...)
	b = append(b, `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,`+
		`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_f9f4fb6dbf","choices":[],"usage":{"prompt_tokens":19,`+
		`"completion_tokens":96,"total_tokens":115}}`+"\n\n"...)
	return append(b, "data: [DONE]\n\n"...)
}

const framerBenchChunkSize = 1400 // one TCP segment's worth, as Envoy hands body chunks to the filter

func framerBenchChunks(b *testing.B) (stream []byte, chunks [][]byte) {
	stream = framerBenchStream(100)
	return stream, framerSplitAt(stream, framerSeqStep(framerBenchChunkSize, len(stream), framerBenchChunkSize)...)
}

func BenchmarkFramerPassthrough(b *testing.B) {
	stream, chunks := framerBenchChunks(b)
	f := NewFramer(0)
	events, data := 0, 0
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		f.Reset()
		for _, c := range chunks {
			if err := f.Feed(c); err != nil {
				b.Fatal(err)
			}
			for {
				ev, ok := f.Next()
				if !ok {
					break
				}
				events++
				data += len(ev.Data)
			}
		}
		if _, ok := f.Flush(); ok {
			events++
		}
	}
	if events%100 != 0 || data == 0 {
		b.Fatalf("%d events", events)
	}
}

// BenchmarkFramerFloor is what any framer has to do at least: find the "\n\n" boundaries of every chunk and
// copy the chunk once (as a carry-over would).
func BenchmarkFramerFloor(b *testing.B) {
	stream, chunks := framerBenchChunks(b)
	buf := make([]byte, 0, framerBenchChunkSize)
	sep := []byte("\n\n")
	events := 0
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range chunks {
			buf = append(buf[:0], c...)
			for i := 0; ; {
				j := bytes.Index(buf[i:], sep)
				if j < 0 {
					break
				}
				events++
				i += j + 2
			}
		}
	}
	if events == 0 {
		b.Fatal("no events")
	}
}
