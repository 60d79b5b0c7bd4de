package mcorules

import (
	"fmt"
	"strings"
)

// toml11Syntax finds what ndp's TOML decoder (BurntSushi/toml 1.6, TOML
// 1.1) reads but the MCO's (toml 1.5 in TOML 1.0 mode, its daemon has no
// BURNTSUSHI_TOML_110) refuses, so that such a registries.conf fails the
// update here as it does in the MCO: a newline or a trailing comma inside
// an inline table, a \e or \xHH escape in a basic string, a time without
// seconds. It returns "" for anything else, leaving the verdict to the
// decoder; it is not a TOML validator.
func toml11Syntax(s string) string {
	var stack []byte // '[' an array value, '{' an inline table
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1]
	}
	line, inValue := 1, false
	at := func(what string) string {
		return fmt.Sprintf("line %d: %s (TOML 1.1; the MCO reads TOML 1.0)", line, what)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			if top() == '{' {
				return at("a newline inside an inline table")
			}
			line++
			if len(stack) == 0 {
				inValue = false
			}
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], `"""`), c == '"':
			quote, multi := `"`, strings.HasPrefix(s[i:], `"""`)
			if multi {
				quote = `"""`
			}
			j := i + len(quote)
			for j < len(s) && !strings.HasPrefix(s[j:], quote) {
				switch s[j] {
				case '\\':
					if j+1 < len(s) && (s[j+1] == 'e' || s[j+1] == 'x') {
						return at(fmt.Sprintf(`the escape \%c`, s[j+1]))
					}
					if j+1 < len(s) && s[j+1] == '\n' {
						line++
					}
					j += 2
					continue
				case '\n':
					if !multi {
						return "" // not TOML at all: the decoder says why
					}
					line++
				}
				j++
			}
			i = closeQuotes(s, j, quote)
		case strings.HasPrefix(s[i:], "'''"), c == '\'':
			quote := "'"
			if strings.HasPrefix(s[i:], "'''") {
				quote = "'''"
			}
			j := i + len(quote)
			for j < len(s) && !strings.HasPrefix(s[j:], quote) {
				if s[j] == '\n' {
					line++
				}
				j++
			}
			i = closeQuotes(s, j, quote)
		case c == '=' && len(stack) == 0:
			inValue = true
			i++
		case (c == '[' || c == '{') && inValue:
			stack = append(stack, c)
			i++
		case (c == ']' && top() == '[') || (c == '}' && top() == '{'):
			stack = stack[:len(stack)-1]
			i++
		case c == ',' && top() == '{':
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if j < len(s) && s[j] == '}' {
				return at("a trailing comma in an inline table")
			}
			i++
		case inValue && isDigit(c) && (i == 0 || !isDigit(s[i-1]) && s[i-1] != ':') &&
			i+5 <= len(s) && isDigit(s[i+1]) && s[i+2] == ':' && isDigit(s[i+3]) && isDigit(s[i+4]) &&
			(i+5 == len(s) || s[i+5] != ':'):
			return at("a time without seconds")
		default:
			i++
		}
	}
	return ""
}

// closeQuotes is the index after a string's closing quote at j; a
// multi-line string may end with up to two more quote characters, which
// belong to its contents.
func closeQuotes(s string, j int, quote string) int {
	if j >= len(s) {
		return len(s)
	}
	j += len(quote)
	if len(quote) == 3 {
		for k := 0; k < 2 && j < len(s) && s[j] == quote[0]; k++ {
			j++
		}
	}
	return j
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
