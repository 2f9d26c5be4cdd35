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
			head := strings.TrimSpace(line[1:end])
			if q := strings.IndexByte(line, '"'); q >= 0 && q < end {
				// [section "sub"]: the subsection may hold ] and escapes.
				if e := closingQuote(line, q); e > q {
					head = strings.TrimSpace(line[1:q])
					sub := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(line[q+1 : e])
					if end = strings.IndexByte(line[e:], ']'); end < 0 {
						continue
					}
					end += e
					cur = strings.ToLower(head) + "\x00" + sub
					line = strings.TrimSpace(line[end+1:])
					goto body
				}
			}
			if i := strings.IndexAny(head, " \t\""); i >= 0 {
				head = head[:i] + "\x00" // a subsection: not the section itself
			} else if sec, sub, ok := strings.Cut(head, "."); ok {
				head = sec + "\x00" + strings.ToLower(sub) // [branch.main], the old form
			}
			cur = strings.ToLower(head)
			line = strings.TrimSpace(line[end+1:])
		}
	body:
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

// ConfigSubValue returns the last value of section.sub.key ([section
// "sub"], sub case-sensitive) in a git configuration's text.
func ConfigSubValue(text, section, sub, key string) string {
	return ConfigValue(text, strings.ToLower(section)+"\x00"+sub, strings.ToLower(key))
}

// closingQuote returns the index of the quote closing the one at q, or -1.
func closingQuote(s string, q int) int {
	for i := q + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
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
