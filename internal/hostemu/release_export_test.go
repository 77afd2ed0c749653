package hostemu

// What release_test.go (package hostemu_test) reaches inside the package.

// Field is field, the reflective access release.go builds on.
var Field = field

// MadeByProxytest is madeByProxytest.
var MadeByProxytest = madeByProxytest

// ID is the host's context id of the exchange's stream.
func (x *Exchange) ID() uint32 { return x.id }
