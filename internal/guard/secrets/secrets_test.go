package secrets

import (
	"encoding/base64"
	"strings"
	"testing"
)

const (
	ghp = "ghp_C3N8FeKjFTrKCb0Tz8BbwTKx8EqwtHmcOJEZ"
	aws = "AKIAGPRQSE4T5ZZHQOUW"
)

func rules(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func TestScan(t *testing.T) {
	tests := []struct {
		text string
		want string // a rule id, or "" for nothing
	}{
		{"token=" + ghp, "github-pat"},
		{"AWS_ACCESS_KEY_ID=" + aws, "aws-access-token"},
		{"docs say AKIAIOSFODNN7EXAMPLE", ""},
		{"d=" + base64.StdEncoding.EncodeToString([]byte("key "+ghp)), "github-pat"},
		{"x=%67%68%70%5F" + ghp[4:], "github-pat"},
		{"gh\u200bp_" + ghp[4:], "github-pat"},
		{"postgres://app:Hq8zN2vL5xR7tW3k@db:5432/prod", "connection-string-password"},
		{"postgres://app:password@db/x", ""},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7", "private-key"},
		{"commit 9fceb02d0ae598e95dc970b74767f19372d61af8 and id 3f2b8c4e-9a1d-4e7b-8c2f-1a2b3c4d5e6f", ""},
		{`{"api_key": "Zx81mQpL2vN7rT4wK9sB6yH3cF5gJ0aD"}`, "generic-api-key"},
		{`{"token_endpoint": "https://auth.example.com/oauth/token"}`, ""},
	}
	for _, tt := range tests {
		got := rules(Scan(tt.text))
		switch {
		case tt.want == "" && len(got) > 0:
			t.Errorf("%q: found %v, want nothing", tt.text, got)
		case tt.want != "" && !strings.Contains(strings.Join(got, " "), tt.want):
			t.Errorf("%q: found %v, want %s", tt.text, got, tt.want)
		}
	}
}

func TestScanPartsJoins(t *testing.T) {
	fs := ScanParts([]Part{{Name: "query a", Text: aws[:10]}, {Name: "query b", Text: aws[10:]}})
	if len(fs) == 0 || fs[0].Rule != "aws-access-token" || !strings.Contains(fs[0].Where, "joined fields") {
		t.Fatalf("a key split across two fields: %+v", fs)
	}
	labels := JoinLabels(aws[:7] + "." + aws[7:14] + "." + aws[14:] + ".evil.example")
	if !strings.Contains(labels, aws) {
		t.Fatalf("JoinLabels: %q", labels)
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		ghp:        "ghp_…(40 chars)",
		"abcdefgh": "ab…(8 chars)",
		"":         "…(0 chars)",
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKnownValues(t *testing.T) {
	fp, err := NewFingerprints(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	const v = "4moUxm/yI5B/KGnplJJpdu0ol29vX6N/631mG8YE"
	const short = "tkI*vz!zZJ"
	fp.Add("~/.aws/credentials", v)
	fp.Add("~/.netrc", short)
	a := New(Options{Known: fp})
	for _, text := range []string{"x=" + v, "zz" + v[3:30] + "yy", "p=" + short + "&q=1", base64.StdEncoding.EncodeToString([]byte("s " + v))} {
		fs := a.Scan(text)
		if len(fs) != 1 || fs[0].Rule != "known-value" || fs[0].Source == "" {
			t.Errorf("%q: %+v", text, fs)
		}
		for _, f := range fs {
			if strings.Contains(f.Masked, v[4:12]) {
				t.Errorf("the finding shows the value: %+v", f)
			}
		}
	}
	if fs := a.Scan("p=" + short[:7]); len(fs) != 0 {
		t.Errorf("a piece of a short value: %+v", fs)
	}
	// A short value joined to other text by a soft separator (x-VALUE,
	// VALUE_v2.png, a.b.VALUE) is found; one glued to letters is not (a
	// limit), nor a value's piece with a separator around it.
	const pw = "0ZzlsUXnDAUyQJKC"
	fp.Add(".env", pw)
	for _, text := range []string{"t=x-" + pw, "/x_" + pw + "_v2.png", "a.b." + pw, "p=" + pw + "+1", "k=#" + short + "#"} {
		fs := a.Scan(text)
		if len(fs) != 1 || fs[0].Rule != "known-value" {
			t.Errorf("a short value joined by a soft separator, %q: %+v", text, fs)
		}
	}
	for _, text := range []string{"a" + pw, "x-" + pw[:12] + "-y", "x-" + pw + "z"} {
		if fs := a.Scan(text); len(fs) != 0 {
			t.Errorf("%q: %+v", text, fs)
		}
	}
	// With only long values known, the token pass is skipped: the windows
	// still find a value standing alone, embedded, or at the text's end,
	// and Redact replaces the token holding it.
	fpl, _ := NewFingerprints(NewKey())
	fpl.Add("env", v)
	al := New(Options{Known: fpl})
	for _, text := range []string{v, "x=" + v, `{"k":"` + v + `"}`, "abc" + v + "def ", "zz" + v[5:28]} {
		if fs := al.Scan(text); len(fs) != 1 || fs[0].Rule != "known-value" {
			t.Errorf("long values only, %q: %+v", text, fs)
		}
	}
	if red, fs := al.Redact(`{"k":"` + v + `"}`); len(fs) != 1 || strings.Contains(red, v[:10]) {
		t.Errorf("redact: %q %+v", red, fs)
	}
	// Stored and reloaded fingerprints find the same values.
	st, _ := fp.Fingerprint("x", v)
	fp2, _ := NewFingerprints(make([]byte, KeySize))
	fp2.AddFP(st)
	if fs := New(Options{Known: fp2}).Scan(v); len(fs) != 0 {
		t.Errorf("fingerprints of another key match: %+v", fs)
	}
	if ValuesOf("[default]\naws_secret_access_key = " + v + "\nregion = us-east-1\n")[0] != v {
		t.Errorf("ValuesOf: %q", ValuesOf("aws_secret_access_key = "+v))
	}
}

func TestRedact(t *testing.T) {
	text := "a " + ghp + " b " + ghp + " c " + base64.StdEncoding.EncodeToString([]byte("k "+aws))
	out, fs := Redact(text)
	if strings.Contains(out, ghp) || strings.Count(out, "ghp_…(40 chars)") != 2 {
		t.Fatalf("Redact: %q", out)
	}
	var decoded bool
	for _, f := range fs {
		if f.Rule == "aws-access-token" && f.Where == "base64" && f.End == 0 {
			decoded = true
		}
	}
	if !decoded {
		t.Errorf("the base64 key is not reported as found in a decoding: %+v", fs)
	}
}

func TestRulesLoad(t *testing.T) {
	rs, err := loadRules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.rules) < 200 {
		t.Fatalf("%d rules from gitleaks' configuration", len(rs.rules))
	}
	// Every regular expression compiles with Go's engine.
	for _, r := range rs.rules {
		if r.re.get() == nil {
			t.Errorf("rule %s does not compile", r.id)
		}
	}
	t.Logf("%d rules", len(rs.rules))
}
