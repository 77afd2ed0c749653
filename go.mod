module github.com/aidialect/aidialect

go 1.24

require github.com/tidwall/gjson v1.20.0

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)
