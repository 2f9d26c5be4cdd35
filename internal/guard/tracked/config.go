package tracked

import (
	"bufio"
	"strings"
)

// maxConfigBytes bounds a git configuration file read.
const maxConfigBytes = 1 << 20

// ConfigValue returns the last value of section.key (lower case) in a
// git configuration's text: "[section]" headers (a variable may follow on
// the same line), "key = value" lines, values quoted or not, comments
// after # or ; outside quotes.
func ConfigValue(text, section, key string) string {
	cur, val := "", ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			name := strings.TrimSpace(line[1:end])
			if i := strings.IndexAny(name, " \t\""); i >= 0 {
				name = name[:i] + "\x00" // a subsection: not the section itself
			}
			cur = strings.ToLower(name)
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' || cur != section {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		if strings.ToLower(strings.TrimSpace(k)) != key {
			continue
		}
		val = configValue(strings.TrimSpace(v))
	}
	return val
}

// configValue reads a git configuration value: quotes removed, a comment
// after # or ; outside quotes dropped, \" \\ \t \n unescaped.
func configValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}
