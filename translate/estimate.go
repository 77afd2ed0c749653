package translate

// EstimatePromptTokens is a lower estimate of the tokens a request's prompt will cost, read from its raw JSON
// body in one pass without parsing it: the bytes inside its strings (keys included: a message's role and
// field names cost tokens too), over bytesPerTokenFloor, and a token for each number that is an array's
// element (token ids: embeddings' and completions' input). Left out are runs of a string that carry data
// rather than text: a data: URL's payload (base64 images, audio, files) and runs of more than maxTextRun
// bytes of the base64 alphabet without a space (base64 and other encoded payloads), which a provider prices
// per image or per second, far below their length in bytes. Anything else without spaces is text: CJK,
// minified code, words joined by punctuation or escaped newlines all cost tokens.
//
// Low by design: a budget reservation is never refunded (the rate-limit service only adds), so an estimate
// above the real count would charge a client for tokens it never used; the charge at the end brings the
// count up to what the provider reported. An escape counts as the bytes it stands for (\uXXXX as 2, below
// the 3 of most characters written so), not as the 2 or 6 bytes it takes in the body.
func EstimatePromptTokens(body []byte) int {
	textBytes, tokenIDs := 0, 0
	prev := byte(0) // the last byte outside strings that is not white space
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			var n int
			n, i = stringTextBytes(body, i+1)
			textBytes += n
			prev = '"'
		case c == '-' || c >= '0' && c <= '9':
			if prev == '[' || prev == ',' {
				// An array's element (after ',' inside an object comes a key, never a number).
				tokenIDs++
			}
			for i+1 < len(body) && isNumberByte(body[i+1]) {
				i++
			}
			prev = '0'
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
		default:
			prev = c
		}
	}
	return textBytes/bytesPerTokenFloor + tokenIDs
}

// stringTextBytes counts the text bytes of the string starting at body[start] (after its opening quote),
// returning them and the index of its closing quote (len(body) when it has none).
func stringTextBytes(body []byte, start int) (text, end int) {
	dataURL := len(body)-start >= len(dataURLPrefix) && string(body[start:start+len(dataURLPrefix)]) == dataURLPrefix
	// The current run (bytes between spaces): its length in the body, the bytes it stands for, and whether
	// all of them are of the base64 alphabet. A data URL's first run is its header ("data:image/png;base64")
	// until a comma, then its payload.
	run, runText, encoded := 0, 0, true
	header, first := dataURL, true
	endRun := func() {
		isData := encoded && (run > maxTextRun || first && dataURL)
		if !isData {
			text += runText
		}
		run, runText, encoded, header, first = 0, 0, true, false, false
	}
	j := start
	for ; j < len(body); j++ {
		c := body[j]
		if c == '"' {
			break
		}
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			endRun()
			text++
			continue
		}
		if c == '\\' && j+1 < len(body) {
			switch body[j+1] {
			case 'n', 't', 'r':
				// An escaped line break or tab separates words as a space does.
				j++
				endRun()
				text++
				continue
			case '/': // base64 written by encoders that escape slashes
				j++
				run, runText = run+2, runText+1
			case 'u':
				j += 5
				run, runText, encoded = run+6, runText+2, false
			default:
				j++
				run, runText, encoded = run+2, runText+1, false
			}
			continue
		}
		run++
		runText++
		switch {
		case header && c == ',':
			header, encoded = false, true // the payload starts: it must be base64 to be data
		case header && run > maxTextRun:
			header, encoded = false, false // no data URL header is this long: text
		case !header && !isBase64Byte(c):
			encoded = false
		}
	}
	endRun()
	return text, min(j, len(body))
}

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' ||
		c == '-' || c == '_'
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
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
