package translate

// Writing a stream's output in pieces. The end of a Responses stream bridged from chat repeats everything it
// held (up to 4 MiB of text and arguments) in four events: written into one buffer, that end alone would be
// about 17 MiB of the filter's memory. Handed to a sink event by event, through one reused buffer, it costs
// what it holds plus its largest event (docs/responses.md §3.4).

// WriteTo is Write for a caller that takes the output in pieces: emit gets zero or more pieces, each one or
// more whole events, in order; their concatenation is what Write returns. A piece is valid only during the
// call to emit (its buffer is reused for the next one). A stream that is not bridged gives its output in one
// piece, when it has any.
func (s *Stream) WriteTo(chunk []byte, emit func(piece []byte)) error {
	if s.bridge == nil {
		out, err := s.writeChat(chunk)
		if err == nil && len(out) > 0 {
			emit(out)
		}
		return err
	}
	_, err := s.writeBridged(chunk, emit)
	return err
}

// CloseTo is Close for a caller that takes the output in pieces, as WriteTo gives them.
func (s *Stream) CloseTo(emit func(piece []byte)) {
	if s.bridge == nil {
		if out := s.closeChat(); len(out) > 0 {
			emit(out)
		}
		return
	}
	s.closeBridged(emit)
}

// writeBridged converts the next chunk of a bridged stream into Responses events: written to the stream's
// buffer and returned when emit is nil, else handed to emit in pieces (and what it returns is empty).
func (s *Stream) writeBridged(chunk []byte, emit func(piece []byte)) ([]byte, error) {
	chat, err := s.writeChat(chunk)
	if err != nil {
		return nil, err
	}
	events := &s.bridge.events
	events.emit = emit
	defer func() { events.emit = nil }()
	s.bout, err = events.write(s.bout[:0], chat)
	return s.bout, err
}

// closeBridged ends a bridged stream, as writeBridged writes.
func (s *Stream) closeBridged(emit func(piece []byte)) []byte {
	tail := s.closeChat()
	events := &s.bridge.events
	events.emit = emit
	defer func() { events.emit = nil }()
	var err error
	if s.bout, err = events.write(s.bout[:0], tail); err != nil {
		s.bout = events.fail(s.bout[:0], err.Error())
		return s.bout
	}
	s.bout = events.close(s.bout)
	return s.bout
}
