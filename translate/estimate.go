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
// returning them and the index of its closing quote (len(body) when it has none). One pass, each byte
// classified by a table; the common byte (neither a separator, a quote nor an escape) costs a load, a
// compare and an AND, as this runs over every request's body in the module: a run's length is the distance
// between its ends, less what its escapes save, and whether it is all base64 is the AND of its bytes' class.
func stringTextBytes(body []byte, start int) (text, end int) {
	// A run is the bytes between separators: from runStart, saving `saved` bytes of escapes (a "\/" is one
	// text byte, a "\uXXXX" two), base64 while b64 stays 1. A data URL's first run is data when its payload,
	// after the header's comma, is base64 ("data:image/png;base64,iVBOR...").
	runStart, saved, b64, first := start, 0, uint8(1), true
	dataRun := false
	if len(body)-start >= len(dataURLPrefix) && string(body[start:start+len(dataURLPrefix)]) == dataURLPrefix {
		for k := start; k < len(body) && k-start <= maxTextRun; k++ {
			if c := body[k]; c == ',' {
				dataRun = true
				runStart = k + 1 // the payload decides; the header is left out with it
				break
			} else if estimateClass[c] >= classSpace {
				break
			}
		}
	}
	j := runStart
	for ; j < len(body); j++ {
		class := estimateClass[body[j]]
		if class <= classBase64 {
			b64 &= class
			continue
		}
		if class == classQuote {
			break
		}
		separator := class == classSpace
		escapeEnd := j
		if class == classEscape {
			if j+1 >= len(body) {
				b64 = 0
				continue
			}
			switch body[j+1] {
			case 'n', 't', 'r':
				// An escaped line break or tab separates words as a space does.
				separator, escapeEnd = true, j+1
			case '/': // base64 written by encoders that escape slashes
				j++
				saved++
				continue
			case 'u':
				j += 5
				saved += 4
				b64 = 0
				continue
			default:
				j++
				saved++
				b64 = 0
				continue
			}
		}
		if separator {
			run := j - runStart
			if !(b64 == 1 && run > 0 && (run > maxTextRun || first && dataRun)) {
				text += run - saved
			}
			text++ // the separator
			j = escapeEnd
			runStart, saved, b64, first = j+1, 0, 1, false
		}
	}
	end = min(j, len(body))
	if run := end - runStart; !(b64 == 1 && run > 0 && (run > maxTextRun || first && dataRun)) {
		text += max(run-saved, 0)
	}
	return text, end
}

// Byte classes of EstimatePromptTokens' scan.
const (
	classOther uint8 = iota
	classBase64
	classSpace
	classQuote
	classEscape
)

var estimateClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch b := byte(c); {
		case b == ' ' || b == '\n' || b == '\t' || b == '\r':
			t[c] = classSpace
		case b == '"':
			t[c] = classQuote
		case b == '\\':
			t[c] = classEscape
		case isBase64Byte(b):
			t[c] = classBase64
		}
	}
	return t
}()

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
