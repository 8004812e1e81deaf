package main

import "sync"

// lockedSender is an io.Writer that sends each write as one message on a gRPC
// server stream. Send is not safe for concurrent use and a process's stdout
// and stderr are copied concurrently, so writers of one stream share mu.
type lockedSender struct {
	mu   *sync.Mutex
	send func([]byte) error
}

func (w lockedSender) Write(p []byte) (int, error) {
	buf := append([]byte(nil), p...) // the caller may reuse p
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.send(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
