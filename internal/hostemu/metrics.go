package hostemu

import (
	"errors"
	"reflect"
	"slices"
	"unsafe"
)

// The filter's metrics as Envoy's stats store holds them, for the local gateway's admin page. proxytest keeps
// a counter's or gauge's value, but a histogram only as its last recorded value, and lists no names: this
// host reads proxytest's metric tables (read-only, by reflection) and turns each recording into an
// observation of its own histogram, with Envoy's default buckets. To tell one recording from the next when
// both record the same value, it writes a sentinel back after reading one, the only write into proxytest's
// state, confined to histogram values the filter never reads back.

// MetricKind is a metric's type.
type MetricKind int

const (
	Counter MetricKind = iota
	Gauge
	Histogram
)

// Metric is one metric with its value: a counter's or gauge's Value, a histogram's Count, Sum and
// cumulative Buckets (per HistogramBounds, then +Inf in Count).
type Metric struct {
	Name    string
	Kind    MetricKind
	Value   uint64
	Count   uint64
	Sum     uint64
	Buckets []uint64
}

// HistogramBounds are Envoy's default histogram bucket bounds (stats_config.histogram_bucket_settings).
var HistogramBounds = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000,
	300000, 600000, 1800000, 3600000}

// notRecorded marks a histogram value this host has read: any other value is a new recording.
const notRecorded = ^uint64(0)

// histogramState is one histogram's observations.
type histogramState struct {
	count, sum, last uint64
	buckets          []uint64
}

// proxytest's metric tables, found by reflection.
type metricTables struct {
	names, types, values reflect.Value
}

var errNoMetricTables = errors.New("hostemu: proxytest's metric tables were not found (the SDK changed): metrics cannot be listed")

func (h *Host) metricTables() (metricTables, error) {
	if h.tables != nil {
		return *h.tables, nil // found once: the maps live as long as the emulator
	}
	v := reflect.ValueOf(h.emu)
	if v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return metricTables{}, errNoMetricTables
	}
	root := v.Elem().FieldByName("rootHostEmulator")
	if !root.IsValid() || root.Kind() != reflect.Pointer || root.IsNil() {
		return metricTables{}, errNoMetricTables
	}
	r := root.Elem()
	t := metricTables{names: r.FieldByName("metricNameToID"), types: r.FieldByName("metricIDToType"), values: r.FieldByName("metricIDToValue")}
	for _, f := range []reflect.Value{t.names, t.types, t.values} {
		if !f.IsValid() || f.Kind() != reflect.Map {
			return metricTables{}, errNoMetricTables
		}
	}
	// The values map is written (notRecorded) through an addressable view of the unexported field.
	t.values = reflect.NewAt(t.values.Type(), unsafe.Pointer(t.values.UnsafeAddr())).Elem()
	h.tables = &t
	return t, nil
}

// observeHistograms turns the histogram recordings since the last call into observations. Called with mu
// held, after every call into the VM.
func (h *Host) observeHistograms() {
	t, err := h.metricTables()
	if err != nil {
		return
	}
	if n := t.names.Len(); n != h.metricsKnown {
		// New metrics were defined: find the histograms among them (proxy-wasm MetricType 2).
		h.metricsKnown = n
		h.histogramIDs = h.histogramIDs[:0]
		iter := t.types.MapRange()
		for iter.Next() {
			if iter.Value().Uint() == 2 {
				h.histogramIDs = append(h.histogramIDs, uint32(iter.Key().Uint()))
			}
		}
	}
	if h.histograms == nil {
		h.histograms = map[uint32]*histogramState{}
	}
	for _, id := range h.histogramIDs {
		key := reflect.ValueOf(id)
		v := t.values.MapIndex(key)
		if !v.IsValid() || v.Uint() == notRecorded {
			continue
		}
		value := v.Uint()
		hs := h.histograms[id]
		if hs == nil {
			hs = &histogramState{buckets: make([]uint64, len(HistogramBounds))}
			h.histograms[id] = hs
		}
		if h.seenDefine(id) || value != 0 {
			hs.count++
			hs.sum += value
			hs.last = value
			for i, b := range HistogramBounds {
				if float64(value) <= b {
					hs.buckets[i]++
				}
			}
		}
		t.values.SetMapIndex(key, reflect.ValueOf(notRecorded))
	}
}

// seenDefine reports whether the histogram's zero is a recording rather than its definition's initial value:
// proxytest starts every metric at 0, so a first 0 is taken for the definition (a 0 recorded in the very
// callback that defined the histogram is not counted).
func (h *Host) seenDefine(id uint32) bool {
	if h.definedHistograms == nil {
		h.definedHistograms = map[uint32]bool{}
	}
	seen := h.definedHistograms[id]
	h.definedHistograms[id] = true
	return seen
}

// Metrics lists the filter's metrics, by name.
func (h *Host) Metrics() ([]Metric, error) {
	var out []Metric
	err := h.do(func() error {
		t, err := h.metricTables()
		if err != nil {
			return err
		}
		iter := t.names.MapRange()
		for iter.Next() {
			name, id := iter.Key().String(), iter.Value()
			m := Metric{Name: name}
			switch t.types.MapIndex(id).Uint() {
			case 0:
				m.Kind, m.Value = Counter, t.values.MapIndex(id).Uint()
			case 1:
				m.Kind, m.Value = Gauge, t.values.MapIndex(id).Uint()
			default:
				m.Kind = Histogram
				m.Buckets = make([]uint64, len(HistogramBounds))
				if hs := h.histograms[uint32(id.Uint())]; hs != nil {
					m.Count, m.Sum, m.Value = hs.count, hs.sum, hs.last
					copy(m.Buckets, hs.buckets)
				}
			}
			out = append(out, m)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b Metric) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, err
}

// Histogram reads a histogram's last recorded value (an error when it is not defined, or the VM died).
func (h *Host) Histogram(name string) (v uint64, err error) {
	err = h.do(func() error {
		if _, err := h.emu.GetHistogramMetric(name); err != nil {
			return err
		}
		t, err := h.metricTables()
		if err != nil {
			return err
		}
		if hs := h.histograms[uint32(t.names.MapIndex(reflect.ValueOf(name)).Uint())]; hs != nil {
			v = hs.last
		}
		return nil
	})
	return v, err
}
