// Package gjsonpretty holds no code: its test checks that gjson's @pretty and @ugly modifiers, built with
// the stand-in for github.com/tidwall/pretty in third_party/pretty (the root go.mod's replace directive),
// give what they give with the real tidwall/pretty v1.2.0.
package gjsonpretty
