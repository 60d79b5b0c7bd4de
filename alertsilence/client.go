package alertsilence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/alertmanager/api/v2/models"
	"github.com/prometheus/client_golang/api"

	"github.com/ndp-dev/ndp/rolloutgates"
)

// DefaultTimeout bounds each call when Client.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Client posts and expires silences in Alertmanagers (API v2); the zero
// value uses client_golang's default transport.
type Client struct {
	// RoundTripper carries the calls (api.DefaultRoundTripper).
	RoundTripper http.RoundTripper
	// Timeout bounds each call (DefaultTimeout).
	Timeout time.Duration
}

// Post creates s (s.ID "") or updates it (POST /api/v2/silences) and
// returns its id: Alertmanager keeps the id when only the end moves on an
// active silence, and gives a new one (expiring the old) otherwise.
func (c *Client) Post(ctx context.Context, rawURL string, s *models.PostableSilence) (string, error) {
	if err := s.Validate(nil); err != nil {
		return "", fmt.Errorf("%s: %w", rawURL, err)
	}
	body, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	resp, answer, err := c.do(ctx, rawURL, http.MethodPost, "/api/v2/silences", body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", rawURL, resp.Status, rolloutgates.Snippet(answer))
	}
	var ok struct {
		SilenceID string `json:"silenceID"`
	}
	if err := json.Unmarshal(answer, &ok); err != nil || ok.SilenceID == "" {
		return "", fmt.Errorf("%s: not Alertmanager's answer to a new silence: %s", rawURL, rolloutgates.Snippet(answer))
	}
	return ok.SilenceID, nil
}

// Expire ends the silence id now (DELETE /api/v2/silence/{id}). One that
// Alertmanager does not know (its storage lost) or that has ended already
// (expired by hand) is no error: v0.35 answers 404 and 200 for them, older
// ones (Debian's 0.25) 500 with "silence not found" or "already expired".
func (c *Client) Expire(ctx context.Context, rawURL, id string) error {
	resp, answer, err := c.do(ctx, rawURL, http.MethodDelete, "/api/v2/silence/"+url.PathEscape(id), nil)
	if err != nil {
		return err
	}
	gone := resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusInternalServerError &&
		(bytes.Contains(answer, []byte("silence not found")) || bytes.Contains(answer, []byte("already expired")))
	if resp.StatusCode != http.StatusOK && !gone {
		return fmt.Errorf("%s: %s: %s", rawURL, resp.Status, rolloutgates.Snippet(answer))
	}
	return nil
}

func (c *Client) do(ctx context.Context, rawURL, method, path string, body []byte) (*http.Response, []byte, error) {
	rt := c.RoundTripper
	if rt == nil {
		rt = api.DefaultRoundTripper
	}
	ac, err := rolloutgates.NewClient(rawURL, rt)
	if err != nil {
		return nil, nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, ac.URL(path, nil).String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", rawURL, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, answer, err := ac.Do(ctx, req)
	if err != nil {
		return nil, nil, rolloutgates.CallError(rawURL, err)
	}
	return resp, answer, nil
}
