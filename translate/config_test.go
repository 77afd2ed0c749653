package translate

import "testing"

// TestCheckProviderKey: a provider's dialect-specific key is checked by the dialect that owns it; set on a
// provider of another dialect it is refused, naming the dialects that take it.
func TestCheckProviderKey(t *testing.T) {
	tests := []struct {
		name    string
		dialect Dialect
		key     string
		value   string
		err     string // "" = accepted
	}{
		{"azure-openai takes auth bearer", AzureOpenAI, "auth", "bearer", ""},
		{"azure-openai refuses another auth", AzureOpenAI, "auth", "token", `"token" is not one of bearer`},
		{"auth is refused on openai", OpenAI, "auth", "bearer", `"bearer" only applies to azure-openai providers`},
		{"auth is refused on azure-ai", AzureAI, "auth", "bearer", `"bearer" only applies to azure-openai providers`},
		{"azure-ai takes extra_parameters", AzureAI, "extra_parameters", "pass-through", ""},
		{"azure-ai takes the old name ignore", AzureAI, "extra_parameters", "ignore", ""},
		{"azure-ai takes error", AzureAI, "extra_parameters", "error", ""},
		{"azure-ai refuses allow in configuration", AzureAI, "extra_parameters", "allow",
			`"allow" is not one of pass-through, drop, error`},
		{"extra_parameters is refused on openai", OpenAI, "extra_parameters", "drop", `"drop" only applies to azure-ai providers`},
		{"extra_parameters is refused on azure-openai", AzureOpenAI, "extra_parameters", "error", `"error" only applies to azure-ai providers`},
		{"eternalai takes chain_id", EternalAI, "chain_id", "8453", ""},
		{"eternalai refuses a chain_id that is no number", EternalAI, "chain_id", "base",
			`"base" must be a decimal chain id such as "45762"`},
		{"chain_id is refused on openai", OpenAI, "chain_id", "8453", `"8453" only applies to eternalai providers`},
		{"chain_id is refused on azure-ai", AzureAI, "chain_id", "8453", `"8453" only applies to eternalai providers`},
		{"a bad value on the wrong dialect", OpenAI, "chain_id", "base", `"base" is not a valid chain_id for any provider entry`},
		{"deployment is a model key only", AzureOpenAI, "deployment", "prod", `no dialect takes deployment in a provider entry`},
		{"an unknown key", AzureAI, "region", "eastus", `no dialect takes region in a provider entry`},
		{"an unknown dialect takes nothing", DialectUnknown, "chain_id", "8453", `"8453" only applies to eternalai providers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfigError(t, settingErr(tt.dialect, ProviderSetting, tt.key, tt.value), tt.err)
		})
	}
}

// TestCheckModelKey: as TestCheckProviderKey, for a model entry's keys.
func TestCheckModelKey(t *testing.T) {
	tests := []struct {
		name    string
		dialect Dialect
		key     string
		value   string
		err     string
	}{
		{"azure-openai takes a deployment", AzureOpenAI, "deployment", "gpt-4o-prod", ""},
		{"azure-ai takes a deployment", AzureAI, "deployment", "Llama_3.1-70B", ""},
		{"a 64-character deployment", AzureOpenAI, "deployment", "a234567890123456789012345678901234567890123456789012345678901234", ""},
		{"a deployment with a slash", AzureOpenAI, "deployment", "a/b", `"a/b" must be 1-64 characters of A-Z a-z 0-9 . _ -`},
		{"a dot-dot deployment", AzureAI, "deployment", "..", `".." must be 1-64 characters of A-Z a-z 0-9 . _ -`},
		{"a deployment with a space", AzureAI, "deployment", "my model", `"my model" must be 1-64 characters of A-Z a-z 0-9 . _ -`},
		{"deployment is refused on openai", OpenAI, "deployment", "prod", `"prod" only applies to azure-openai and azure-ai providers`},
		{"deployment is refused on eternalai", EternalAI, "deployment", "prod", `"prod" only applies to azure-openai and azure-ai providers`},
		{"a bad deployment on the wrong dialect", OpenAI, "deployment", "a/b", `"a/b" is not a valid deployment for any model entry`},
		{"eternalai takes a model's chain_id", EternalAI, "chain_id", "45762", ""},
		{"eternalai refuses a model's bad chain_id", EternalAI, "chain_id", "0x2105", `"0x2105" must be a decimal chain id such as "45762"`},
		{"a model's chain_id is refused on azure-openai", AzureOpenAI, "chain_id", "1", `"1" only applies to eternalai providers`},
		{"auth is a provider key only", AzureOpenAI, "auth", "bearer", `no dialect takes auth in a model entry`},
		{"extra_parameters is a provider key only", AzureAI, "extra_parameters", "drop", `no dialect takes extra_parameters in a model entry`},
		{"an unknown key", EternalAI, "owner", "me", `no dialect takes owner in a model entry`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfigError(t, settingErr(tt.dialect, ModelSetting, tt.key, tt.value), tt.err)
		})
	}
}

// settingErr is the error of applying one setting, as its check wrote it (without the key).
func settingErr(d Dialect, level SettingLevel, key, value string) error {
	if _, err := (Settings{}).With(d, level, []Setting{{key, value}}); err != nil {
		return err.Err
	}
	return nil
}

func checkConfigError(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want != "" && err == nil:
		t.Errorf("accepted, want %s", want)
	case want != "" && err.Error() != want:
		t.Errorf("error %q\nwant  %q", err.Error(), want)
	}
}

// TestCheckOneOf: the helper behind one-of keys.
func TestCheckOneOf(t *testing.T) {
	tests := []struct {
		value  string
		values []string
		err    string
	}{
		{"bearer", []string{"bearer"}, ""},
		{"b", []string{"a", "b"}, ""},
		{"Bearer", []string{"bearer"}, `"Bearer" is not one of bearer`},
		{"", []string{"a", "b"}, `"" is not one of a, b`},
	}
	for _, tt := range tests {
		checkConfigError(t, checkOneOf(tt.value, tt.values...), tt.err)
	}
}

// TestAuthBearerOnlyWhereTheKeyIsInItsOwnHeader: "auth": "bearer" (ProviderAuthHeaders then sends the key as
// a bearer token) is taken exactly by azure-openai, whose key otherwise goes in api-key; a dialect that
// already sends Authorization: Bearer has no use for it.
func TestAuthBearerOnlyWhereTheKeyIsInItsOwnHeader(t *testing.T) {
	for _, d := range Dialects {
		if accepted := settingErr(d, ProviderSetting, "auth", "bearer") == nil; accepted != (d == AzureOpenAI) {
			t.Errorf("%s: auth bearer accepted %v", d, accepted)
		}
	}
}
