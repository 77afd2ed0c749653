package translate

import (
	"reflect"
	"slices"
	"testing"
)

// TestEveryDialectIsListedWithItsTable: every Dialect value below DialectLimit is in Dialects, has its table
// and parses back from its name, so a dialect added to the constants cannot be left out of the tables that
// are sized or iterated by them.
func TestEveryDialectIsListedWithItsTable(t *testing.T) {
	for d := DialectUnknown + 1; d < DialectLimit; d++ {
		if !slices.Contains(Dialects, d) {
			t.Errorf("dialect %d is not in Dialects", d)
		}
		if d.spec() == nil {
			t.Errorf("dialect %d has no table", d)
			continue
		}
		if back, err := ParseDialect(d.String()); err != nil || back != d {
			t.Errorf("dialect %d's name %q does not parse back: %v", d, d.String(), err)
		}
	}
	if len(Dialects) != int(DialectLimit)-1 {
		t.Errorf("Dialects has %d entries, want %d", len(Dialects), DialectLimit-1)
	}
}

// TestEveryDialectFillsEveryHook: a dialect's table sets every hook (a dialect without a rule of some kind
// names the shared no-op), its error envelope, and a way for clients to reach it (routes, or a body it
// claims), so a dialect added to the list with a hook forgotten fails here instead of panicking at the first
// request that needs it.
func TestEveryDialectFillsEveryHook(t *testing.T) {
	for _, d := range Dialects {
		for _, problem := range specProblems(d.spec()) {
			t.Errorf("%s: %s", d, problem)
		}
	}
	// The check itself: a table with a hook left out is caught.
	incomplete := *specs[OpenAI]
	incomplete.editEvent = nil
	if len(specProblems(&incomplete)) == 0 {
		t.Error("a table without editEvent passed the check")
	}
}

func specProblems(s *dialectSpec) (problems []string) {
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Func && f.IsNil() {
			problems = append(problems, "hook "+v.Type().Field(i).Name+" is not set (use the shared no-op if the dialect has no such rule)")
		}
	}
	if s.name == "" || s.operations == 0 {
		problems = append(problems, "no name or no operations")
	}
	if s.errors.write == nil || s.errors.recognises == nil {
		problems = append(problems, "error envelope incomplete")
	}
	if len(s.routes) == 0 && reflect.ValueOf(s.claimsRequest).Pointer() == reflect.ValueOf(claimsNothing).Pointer() {
		problems = append(problems, "no client can reach it: list its routes or claim requests by their body")
	}
	if s.usesAPIVersion != (s.defaultAPIVersion != "") || s.usesAPIVersion != (s.versionHint != "") {
		problems = append(problems, "an api-version dialect needs a default and a hint, and only it")
	}
	for _, r := range s.bodyRules {
		if r.plan == nil || r.field == fieldOther {
			problems = append(problems, "a body rule without a plan or for no field kind")
		}
	}
	for _, k := range s.answerKeys {
		if k.fate == nil || k.name == "" {
			problems = append(problems, "answer key "+k.name+" without a fate")
		}
	}
	return problems
}

// TestRoutesDoNotOverlap: no two dialects serve the same request line (path and api-version presence), so
// which one a request is does not depend on the order of the dialect list.
func TestRoutesDoNotOverlap(t *testing.T) {
	for i, a := range routes {
		for _, b := range routes[i+1:] {
			if a.path == b.path && a.op == b.op && a.deploymentSegment == b.deploymentSegment &&
				(a.version == b.version || a.version == versionAny || b.version == versionAny ||
					a.version == versionIgnored || b.version == versionIgnored) {
				t.Errorf("%s and %s both serve %q", a.dialect, b.dialect, a.path)
			}
		}
	}
}
