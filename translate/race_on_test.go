//go:build race

package translate

// raceEnabled: the race detector is on, so timing tests are skipped.
const raceEnabled = true
