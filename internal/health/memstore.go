package health

import "sync"

// MemStore is a Store that behaves as proxy-wasm-cpp-host's shared data (src/shared_data.cc; see
// docs/envoy-host.md section 9): one map for every worker of the process, one lock, a cas counter shared by
// every key and bumped on each write, a write with cas 0 or to a missing key unconditional, any other cas
// compared. It serves the native tests and the hosts in internal/hostemu and e2e/gateway.
type MemStore struct {
	mu      sync.Mutex
	entries map[string]memEntry
	nextCas uint32
	// BeforeSet, when set, runs before each write is applied, outside the lock: a test makes another
	// worker write in between a read and a write there.
	BeforeSet func(key string)
}

type memEntry struct {
	value []byte
	cas   uint32
}

// Get returns a copy of the value, as a host copies it into the guest's memory.
func (m *MemStore) Get(key string) ([]byte, uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return nil, 0, ErrNotFound
	}
	return append([]byte(nil), e.value...), e.cas, nil
}

// Set writes the value when cas is 0, the key is missing, or cas is the key's current one.
func (m *MemStore) Set(key string, value []byte, cas uint32) error {
	if hook := m.BeforeSet; hook != nil {
		m.BeforeSet = nil // once: the hook's own writes go straight in
		hook(key)
		m.BeforeSet = hook
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[string]memEntry{}
	}
	if e, ok := m.entries[key]; ok && cas != 0 && cas != e.cas {
		return ErrCasMismatch
	}
	m.nextCas++
	if m.nextCas == 0 {
		m.nextCas = 1
	}
	m.entries[key] = memEntry{value: append([]byte(nil), value...), cas: m.nextCas}
	return nil
}

// Len is the number of keys written.
func (m *MemStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
