package planner

// HeapBytes is the Go heap as the memory watchdog sees it, for tests that
// report peaks.
var HeapBytes = heapBytes
