// Package pretty formats JSON: Pretty spreads it over indented lines, Ugly removes its insignificant
// whitespace. It stands in for github.com/tidwall/pretty v1.2.0 in this repository's build (see README.md)
// and has only the part of that API that github.com/tidwall/gjson uses, with the same output for valid
// JSON, without encoding/json, reflect or fmt.
//
// Nothing here recurses: the input is read into a flat list of values with an explicit stack, and the
// output is written from that list by a cursor with its own stack, so a deeply nested input costs memory
// in proportion to its size, never goroutine stack. The work is linear in the input and the output, plus
// the sorting of object members when SortKeys is set.
package pretty

import (
	"strconv"
	"unicode/utf8"
)

// Options is Pretty options.
type Options struct {
	// Width is the widest line an array may be written on when it fits on one line (arrays holding no
	// object only). Default is 80; 0 or less writes every array over several lines.
	Width int
	// Prefix starts every line. Default is an empty string.
	Prefix string
	// Indent is one level of nesting. Default is two spaces.
	Indent string
	// SortKeys sorts the members of objects by key (decoded), members with equal keys by value.
	// Default is false.
	SortKeys bool
}

// DefaultOptions is the default options for pretty formats.
var DefaultOptions = &Options{Width: 80, Prefix: "", Indent: "  ", SortKeys: false}

// Pretty converts the input json into a more human readable format where each element is on its own line
// with clear indentation.
func Pretty(json []byte) []byte { return PrettyOptions(json, nil) }

// PrettyOptions is like Pretty but with customized options.
//
// The output is tidwall/pretty's for valid JSON, whatever the options, except in one case no caller here
// can reach: with SortKeys and a Prefix or Indent holding something other than whitespace, members with
// equal keys may come in another order. Invalid JSON gives some output, never a panic.
func PrettyOptions(json []byte, opts *Options) []byte {
	if opts == nil {
		opts = DefaultOptions
	}
	p := printer{json: json, width: opts.Width, prefix: opts.Prefix, indent: opts.Indent, sortKeys: opts.SortKeys}
	out := make([]byte, 0, len(json)+len(json)/2+len(opts.Prefix)+1)
	out = append(out, opts.Prefix...)
	if root := p.parse(); root >= 0 {
		c := &p.cursors[0]
		c.start(&p, root, 0, len(opts.Prefix))
		for piece := c.next(); piece != nil; piece = c.next() {
			out = append(out, piece...)
		}
	}
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return out
}

// Ugly removes insignificant space characters from the input json byte slice and returns the compacted
// result: every byte up to ' ' outside strings.
func Ugly(json []byte) []byte {
	out := make([]byte, 0, len(json))
	for i := 0; i < len(json); {
		switch c := json[i]; {
		case c <= ' ':
			i++
		case c == '"':
			end := stringEnd(json, i)
			out = append(out, json[i:end]...)
			i = end
		default:
			j := i + 1
			for j < len(json) && json[j] > ' ' && json[j] != '"' {
				j++
			}
			out = append(out, json[i:j]...)
			i = j
		}
	}
	return out
}

// stringEnd is the index just past the string starting with the quote at json[i]: past its closing quote,
// or len(json) when it has none.
func stringEnd(json []byte, i int) int {
	for i++; i < len(json); i++ {
		switch json[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(json)
}

// Kinds of value.
const (
	kindNone   uint8 = iota // an object member with no value (invalid input): written as nothing
	kindString              // json[start:end], quotes included
	kindNumber              // json[start:end]
	kindTrue
	kindFalse
	kindNull
	kindArray
	kindObject
)

// node is one value of the input. Nodes are in the order their values start, so a container's first
// child is the node right after it.
type node struct {
	start, end  int // string or number: its bytes, json[start:end]
	key, keyEnd int // object member: its key, quotes included, json[key:keyEnd]
	next        int // the next child of the same container; 0 for none (node 0 is the root)
	count       int // container: its children
	// array: its length written on one line; object, when sorting: where its members' order starts in
	// printer.order
	size      int
	kind      uint8
	hasObject bool // array: holds an object, itself or in an array it holds, so it is never one line
}

type printer struct {
	json     []byte
	width    int
	prefix   string
	indent   string
	sortKeys bool

	nodes []node
	order []int // sorted objects' members, each object's in one run

	lines     []byte // ",\n" + prefix + linesTabs indents; the start of every line comes from it
	linesTabs int

	cursors [3]cursor // one to write the output, two to compare members' values while sorting
	members []member  // scratch for sorting one object
	spare   []member
}

// lineStart is ",\n" followed by the start of a line at nesting depth tabs (prefix, then tabs indents).
func (p *printer) lineStart(tabs int) []byte {
	n := 2 + p.margin(tabs)
	if n > len(p.lines) {
		t := max(tabs, 2*p.linesTabs, 8)
		b := make([]byte, 0, 2+p.margin(t))
		b = append(b, ",\n"...)
		b = append(b, p.prefix...)
		for range t {
			b = append(b, p.indent...)
		}
		p.lines, p.linesTabs = b, t
	}
	return p.lines[:n]
}

// margin is the length of the start of a line at depth tabs.
func (p *printer) margin(tabs int) int { return len(p.prefix) + tabs*len(p.indent) }

// startsValue tells the bytes that start a value for tidwall/pretty, which reads NaN and Infinity spelled in
// several ways as numbers.
func startsValue(c byte) bool {
	switch c {
	case '"', '{', '[', '-', 't', 'f', 'n', 'i', 'I', '+', 'N':
		return true
	}
	return c >= '0' && c <= '9'
}

// open is a container being read: its node and its last child so far.
type open struct{ n, last int }

// parse reads the input into p.nodes and returns the root's index, or -1 when the input has no value.
// Like tidwall/pretty, it reads the first value and ignores what follows, skips bytes that cannot start a
// value where one is due, and reads the first four or five bytes of a literal that starts with t, f or n
// as true, false or null.
func (p *printer) parse() int {
	js := p.json
	i := 0
	for i < len(js) && !startsValue(js[i]) {
		i++
	}
	if i == len(js) {
		return -1
	}
	var stack []open
	i = p.value(i, 0, 0, &stack)
	for len(stack) > 0 {
		if i >= len(js) { // unterminated: close what is open
			p.close(&stack)
			continue
		}
		c := js[i]
		switch {
		case c <= ' ' || c == ',':
			i++
		case c == ']' || c == '}':
			i++
			p.close(&stack)
		case p.nodes[stack[len(stack)-1].n].kind == kindObject:
			if c != '"' {
				i++
				continue
			}
			key := i
			i = stringEnd(js, i)
			keyEnd := i
			for i < len(js) && (js[i] <= ' ' || js[i] == ':') {
				i++
			}
			if i < len(js) && startsValue(js[i]) {
				i = p.value(i, key, keyEnd, &stack)
			} else {
				p.add(kindNone, i, i, key, keyEnd, &stack)
			}
		case startsValue(c):
			i = p.value(i, 0, 0, &stack)
		default:
			i++
		}
	}
	return 0
}

// value reads the value starting at js[i] (startsValue), a member of an object when keyEnd > 0, and
// returns the index past it (past its opening bracket for a container, which stays open on the stack).
func (p *printer) value(i, key, keyEnd int, stack *[]open) int {
	js := p.json
	kind, end := kindNumber, i+1
	switch c := js[i]; c {
	case '"':
		kind, end = kindString, stringEnd(js, i)
	case '[', '{':
		kind = kindArray
		if c == '{' {
			kind = kindObject
		}
	case 't':
		kind, end = kindTrue, i+4
	case 'f':
		kind, end = kindFalse, i+5
	case 'n':
		if i+1 < len(js) && js[i+1] != 'u' {
			break // nan, a number
		}
		kind, end = kindNull, i+4
	}
	if kind == kindNumber {
		for end < len(js) {
			if c := js[end]; c <= ' ' || c == ',' || c == ':' || c == ']' || c == '}' {
				break
			}
			end++
		}
	}
	end = min(end, len(js))
	p.add(kind, i, end, key, keyEnd, stack)
	return end
}

// add appends a node as the next child of the innermost open container, and opens it if it is a container.
func (p *printer) add(kind uint8, start, end, key, keyEnd int, stack *[]open) {
	n := len(p.nodes)
	p.nodes = append(p.nodes, node{start: start, end: end, key: key, keyEnd: keyEnd, kind: kind})
	if len(*stack) > 0 {
		top := &(*stack)[len(*stack)-1]
		parent := &p.nodes[top.n]
		if parent.count > 0 {
			p.nodes[top.last].next = n
		}
		parent.count++
		top.last = n
		if parent.kind == kindArray {
			if parent.count > 1 {
				parent.size += len(", ")
			}
			switch kind {
			case kindString, kindNumber:
				parent.size += end - start
			case kindTrue, kindNull:
				parent.size += 4
			case kindFalse:
				parent.size += 5
			case kindObject:
				parent.hasObject = true
			}
		}
	}
	if kind == kindArray || kind == kindObject {
		p.nodes[n].size = len("[]")
		*stack = append(*stack, open{n: n})
	}
}

// close closes the innermost open container: sorts it if it is an object and keys are sorted, and counts
// it into its parent's one-line length if both are arrays.
func (p *printer) close(stack *[]open) {
	n := (*stack)[len(*stack)-1].n
	*stack = (*stack)[:len(*stack)-1]
	if p.nodes[n].kind == kindObject {
		if p.sortKeys {
			p.sort(n, len(*stack))
		}
		return
	}
	if len(*stack) > 0 {
		parent := &p.nodes[(*stack)[len(*stack)-1].n]
		if parent.kind == kindArray {
			parent.size += p.nodes[n].size
			parent.hasObject = parent.hasObject || p.nodes[n].hasObject
		}
	}
}

// member is an object member being sorted: its node and its key's text.
type member struct {
	n   int
	key []byte
}

// sort puts the members of object n (at depth tabs) in tidwall/pretty's SortKeys order into p.order: by key
// as decoded, members with equal keys by value, a stable sort. Every object it holds is closed, so sorted,
// already.
func (p *printer) sort(n, tabs int) {
	obj := &p.nodes[n]
	obj.size = len(p.order)
	ms := p.members[:0]
	for c, k := n+1, 0; k < obj.count; c, k = p.nodes[c].next, k+1 {
		nd := &p.nodes[c]
		ms = append(ms, member{n: c, key: text(p.json[nd.key:nd.keyEnd])})
	}
	// Bottom-up merge sort: stable, n log n comparisons, and none at all between runs already in order.
	spare := append(p.spare[:0], ms...)
	for w := 1; w < len(ms); w *= 2 {
		for lo := 0; lo+w < len(ms); lo += 2 * w {
			mid, hi := lo+w, min(lo+2*w, len(ms))
			if !p.less(ms[mid], ms[mid-1], tabs) {
				continue
			}
			out := spare[lo:lo]
			a, b := lo, mid
			for a < mid && b < hi {
				if p.less(ms[b], ms[a], tabs) {
					out = append(out, ms[b])
					b++
				} else {
					out = append(out, ms[a])
					a++
				}
			}
			out = append(out, ms[a:mid]...)
			out = append(out, ms[b:hi]...)
			copy(ms[lo:hi], out)
		}
	}
	for _, m := range ms {
		p.order = append(p.order, m.n)
	}
	clear(ms)
	clear(spare)
	p.members, p.spare = ms[:0], spare[:0]
}

// Value types in the order tidwall/pretty sorts members with equal keys by.
const (
	typeNull = iota
	typeFalse
	typeNumber
	typeString
	typeTrue
	typeJSON
)

// typeOf is the type tidwall/pretty gives to a value by the first byte it writes for it.
func (p *printer) typeOf(n int) int {
	nd := &p.nodes[n]
	switch nd.kind {
	case kindString:
		return typeString
	case kindNumber:
		if p.json[nd.start] == 'n' {
			return typeNull
		}
		return typeNumber
	case kindTrue:
		return typeTrue
	case kindFalse:
		return typeFalse
	case kindArray, kindObject:
		return typeJSON
	}
	return typeNull // null, and nothing
}

// less orders members of an object at depth tabs.
func (p *printer) less(a, b member, tabs int) bool {
	if ka, kb := string(a.key), string(b.key); ka != kb {
		return ka < kb
	}
	ta, tb := p.typeOf(a.n), p.typeOf(b.n)
	if ta != tb {
		return ta < tb
	}
	na, nb := &p.nodes[a.n], &p.nodes[b.n]
	va, vb := p.json[na.start:na.end], p.json[nb.start:nb.end]
	switch ta {
	case typeString:
		return string(text(va)) < string(text(vb))
	case typeNumber:
		fa, _ := strconv.ParseFloat(string(va), 64)
		fb, _ := strconv.ParseFloat(string(vb), 64)
		return fa < fb
	}
	return p.compare(a.n, b.n, tabs+1) < 0
}

// compare compares the text written for the values of members a and b of an object, at depth tabs, as
// bytes, writing only as much of either as it takes to tell.
func (p *printer) compare(a, b, tabs int) int {
	x, y := &p.cursors[1], &p.cursors[2]
	x.start(p, a, tabs, p.valueColumn(a, tabs))
	y.start(p, b, tabs, p.valueColumn(b, tabs))
	var xs, ys []byte
	for {
		if len(xs) == 0 {
			xs = x.next()
		}
		if len(ys) == 0 {
			ys = y.next()
		}
		switch {
		case xs == nil && ys == nil:
			return 0
		case xs == nil:
			return -1
		case ys == nil:
			return 1
		}
		k := min(len(xs), len(ys))
		for i := range k {
			if xs[i] != ys[i] {
				if xs[i] < ys[i] {
					return -1
				}
				return 1
			}
		}
		xs, ys = xs[k:], ys[k:]
	}
}

// valueColumn is where tidwall/pretty counts the value of object member n, at depth tabs, to start: one
// past the column, as it counts from the line's newline there.
func (p *printer) valueColumn(n, tabs int) int {
	nd := &p.nodes[n]
	return 1 + p.margin(tabs) + nd.keyEnd - nd.key + len(": ")
}

// text is what tidwall/pretty compares for a string when sorting: the bytes between its quotes, or, when
// it has an escape, what encoding/json decodes from it (nothing when encoding/json refuses it).
func text(s []byte) []byte {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			return unquote(s)
		case '"':
			return s[1:i]
		}
	}
	return nil
}

// unquote decodes a JSON string as encoding/json does: escapes decoded, a \u escape of half a surrogate
// pair that is not followed by the other half and invalid UTF-8 both written as U+FFFD. s must be the
// string and nothing else; nil when it is not valid.
func unquote(s []byte) []byte {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return nil
	}
	s = s[1 : len(s)-1]
	out := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return nil
			}
			e := s[r+1]
			switch e {
			case '"', '\\', '/':
			case 'b':
				e = '\b'
			case 'f':
				e = '\f'
			case 'n':
				e = '\n'
			case 'r':
				e = '\r'
			case 't':
				e = '\t'
			case 'u':
				u := hex4(s[r+2:])
				if u < 0 {
					return nil
				}
				r += 6
				if u >= 0xd800 && u < 0xe000 {
					if u < 0xdc00 && r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if u2 := hex4(s[r+2:]); u2 >= 0xdc00 && u2 < 0xe000 {
							out = utf8.AppendRune(out, 0x10000+(u-0xd800)<<10+(u2-0xdc00))
							r += 6
							continue
						}
					}
					u = utf8.RuneError
				}
				out = utf8.AppendRune(out, u)
				continue
			default:
				return nil
			}
			out = append(out, e)
			r += 2
		case c == '"' || c < ' ':
			return nil
		case c < utf8.RuneSelf:
			out = append(out, c)
			r++
		default:
			u, size := utf8.DecodeRune(s[r:])
			out = utf8.AppendRune(out, u)
			r += size
		}
	}
	return out
}

// hex4 is the number written by the four hex digits s starts with, or -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// frame is a container being written.
type frame struct {
	n       int
	next    int // the next child's node, or, in a sorted object, its index in printer.order
	done    int // children written
	tabs    int
	oneLine bool
	sorted  bool
}

// cursor writes one value piece by piece: next returns each piece of its text in turn, slices of the
// input or of constant text that it does not copy.
type cursor struct {
	p      *printer
	stack  []frame
	pieces [4][]byte
	have   int // pieces waiting
	given  int // of which given out
}

var (
	literals = [...][]byte{kindTrue: []byte("true"), kindFalse: []byte("false"), kindNull: []byte("null")}
	brackets = []byte("[]{}")
	comma    = []byte(", ")
	colon    = []byte(": ")
)

// start sets c to write value n at depth tabs, tidwall/pretty's column count for it being col.
func (c *cursor) start(p *printer, n, tabs, col int) {
	c.p, c.stack, c.have, c.given = p, c.stack[:0], 0, 0
	c.value(n, tabs, col, false)
}

func (c *cursor) put(b []byte) {
	c.pieces[c.have] = b
	c.have++
}

// next returns the next piece of text, never empty, or nil once the value is written.
func (c *cursor) next() []byte {
	for c.given == c.have {
		if len(c.stack) == 0 {
			return nil
		}
		c.have, c.given = 0, 0
		c.step()
	}
	b := c.pieces[c.given]
	c.given++
	return b
}

// value starts writing value n. An array holding no object goes on one line when it fits before the
// width, as tidwall/pretty counts: it must be shorter than width - col by 4 or more, and no longer than it.
func (c *cursor) value(n, tabs, col int, oneLine bool) {
	p := c.p
	nd := &p.nodes[n]
	switch nd.kind {
	case kindString, kindNumber:
		c.put(p.json[nd.start:nd.end])
	case kindTrue, kindFalse, kindNull:
		c.put(literals[nd.kind])
	case kindArray:
		if !oneLine && p.width > 0 {
			room := p.width - col
			oneLine = room > 3 && !nd.hasObject && nd.size <= room
		}
		c.stack = append(c.stack, frame{n: n, next: n + 1, tabs: tabs, oneLine: oneLine})
		c.put(brackets[0:1])
	case kindObject:
		f := frame{n: n, next: n + 1, tabs: tabs}
		if p.sortKeys {
			f.next, f.sorted = nd.size, true
		}
		c.stack = append(c.stack, f)
		c.put(brackets[2:3])
	}
}

// step writes the next child of the innermost container being written, or closes it.
func (c *cursor) step() {
	p := c.p
	f := &c.stack[len(c.stack)-1]
	nd := &p.nodes[f.n]
	if f.done == nd.count {
		if f.done > 0 && !f.oneLine {
			c.put(p.lineStart(f.tabs)[1:])
		}
		if nd.kind == kindArray {
			c.put(brackets[1:2])
		} else {
			c.put(brackets[3:4])
		}
		c.stack = c.stack[:len(c.stack)-1]
		return
	}
	child := f.next
	if f.sorted {
		child = p.order[f.next]
		f.next++
	} else {
		f.next = p.nodes[child].next
	}
	first := f.done == 0
	f.done++
	tabs, oneLine := f.tabs+1, f.oneLine
	col := 0
	switch {
	case oneLine:
		if !first {
			c.put(comma)
		}
	case nd.kind == kindObject:
		// tidwall/pretty counts columns from where it appends the newline, one before the line's start.
		lines := p.lineStart(tabs)
		if first {
			lines = lines[1:]
		}
		c.put(lines)
		ch := &p.nodes[child]
		c.put(p.json[ch.key:ch.keyEnd])
		c.put(colon)
		col = p.valueColumn(child, tabs)
	case first:
		c.put(p.lineStart(tabs)[1:])
		col = 1 + p.margin(tabs)
	default:
		// after the first element it turns the space of ", " into the newline: columns count from the line.
		c.put(p.lineStart(tabs))
		col = p.margin(tabs)
	}
	c.value(child, tabs, col, oneLine)
}
