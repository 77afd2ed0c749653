package translate

// Writing a stream's output in pieces. The end of a Responses stream bridged from chat repeats everything it
// held (up to 4 MiB of text and arguments) in four events: written into one buffer, that end alone would be
// about 17 MiB of the filter's memory. Handed to a sink event by event, through one reused buffer, it costs
// what it holds plus its largest event (docs/responses.md §3.4).

// WriteTo is Write for a caller that takes the output in pieces: emit gets zero or more pieces, each one or
// more whole events, in order; their concatenation is what Write returns. A piece is valid only during the
// call to emit (its buffer is reused for the next one). A chat stream gives its output in one piece, when
// it has any.
func (s *Stream) WriteTo(chunk []byte, emit func(piece []byte)) error {
	_, err := s.surface.write(s, chunk, emit)
	return err
}

// CloseTo is Close for a caller that takes the output in pieces, as WriteTo gives them.
func (s *Stream) CloseTo(emit func(piece []byte)) { s.surface.close(s, emit) }

// ManyPieces reports whether one chunk may give several pieces of output, and the end of the stream more than
// one.
func (s *Stream) ManyPieces() bool { return s.surface.manyPieces() }
