// Package conditions holds what every writer of ndp's conditions, Events
// and status messages shares: the limits the API server sets on a message
// and how a longer one is cut.
package conditions

// MaxMessage is metav1.Condition's limit on a message.
const MaxMessage = 32768

// Message is msg within MaxMessage.
func Message(msg string) string { return Truncate(msg, MaxMessage) }

// Truncate cuts s to n bytes, ending in "..." when it was longer.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
