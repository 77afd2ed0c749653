package translate

// EstimatePromptTokens is a lower estimate of the tokens a request's prompt will cost, read from its raw JSON
// body in one pass without parsing it: the bytes inside its strings (keys included: a message's role and
// field names cost tokens too), over bytesPerTokenFloor. Left out are strings that carry data rather than
// text: data: URLs (base64 images, audio, files) and long runs without a space (base64 and other encoded
// payloads), which a provider prices per image or per second, far below their length in bytes.
//
// Low by design: a budget reservation is never refunded (the rate-limit service only adds), so an estimate
// above the real count would charge a client for tokens it never used; the charge at the end brings the
// count up to what the provider reported.
func EstimatePromptTokens(body []byte) int {
	textBytes := 0
	for i := 0; i < len(body); i++ {
		if body[i] != '"' {
			continue
		}
		// A string: find its end, counting its bytes, and whether it is data rather than text.
		start := i + 1
		run, longRun, spaceless := 0, false, true
		j := start
		for ; j < len(body); j++ {
			c := body[j]
			if c == '\\' {
				j++ // an escape: the next byte is part of it
				run++
				continue
			}
			if c == '"' {
				break
			}
			if c == ' ' || c == '\n' || c == '\t' {
				run = 0
				spaceless = false
				continue
			}
			run++
			if run > maxTextRun {
				longRun = true
			}
		}
		n := j - start
		isData := longRun || (n >= len(dataURLPrefix) && string(body[start:start+len(dataURLPrefix)]) == dataURLPrefix)
		if !isData || (spaceless && n <= maxTextRun) {
			textBytes += n
		}
		i = j
	}
	return textBytes / bytesPerTokenFloor
}

const (
	// bytesPerTokenFloor: English averages about 4 bytes a token, code about 3, CJK text about 3 bytes (one
	// character) for one or two tokens; 5 keeps the estimate under the real count for all of them.
	bytesPerTokenFloor = 5
	// maxTextRun: no word of text runs this long without a space; base64 does.
	maxTextRun = 256
	// dataURLPrefix starts an inline image, audio clip or file.
	dataURLPrefix = "data:"
)
