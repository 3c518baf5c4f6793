package localstack

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"time"
)

// ClientRequestTokenWindow is how long after a successful TransactWriteItems
// call completes a repeat with the same ClientRequestToken is answered from
// memory instead of being applied, as on DynamoDB.
const ClientRequestTokenWindow = 10 * time.Minute

// maxClientRequestTokenLength is DynamoDB's limit on ClientRequestToken.
const maxClientRequestTokenLength = 36

// tokenRecord remembers one successful TransactWriteItems call.
type tokenRecord struct {
	digest  [sha256.Size]byte // of the canonical request without the token
	expires time.Time
}

// tokenStore holds the records of the tokens still inside their window.
// order lists tokens in the order they were recorded, so that expired
// records can be dropped without scanning all of them.
type tokenStore struct {
	records map[string]tokenRecord
	order   []string
}

// lookup returns the unexpired record for token, dropping expired records
// first.
func (s *tokenStore) lookup(token string, now time.Time) (tokenRecord, bool) {
	for len(s.order) > 0 {
		oldest := s.order[0]
		rec, ok := s.records[oldest]
		if ok && now.Before(rec.expires) {
			break
		}
		if ok {
			delete(s.records, oldest)
		}
		s.order = s.order[1:]
	}
	rec, ok := s.records[token]
	if !ok || !now.Before(rec.expires) {
		return tokenRecord{}, false
	}
	return rec, true
}

func (s *tokenStore) add(token string, rec tokenRecord) {
	if _, ok := s.records[token]; !ok {
		s.order = append(s.order, token)
	}
	s.records[token] = rec
}

// requestDigest hashes a TransactWriteItems request without its
// ClientRequestToken, in a canonical form (see canonicalRequest). Two
// requests have the same digest when they carry the same parameters,
// whatever order the client wrote them in.
func requestDigest(body []byte) [sha256.Size]byte {
	canonical, ok := canonicalRequest(make([]byte, 0, len(body)), body)
	if !ok {
		return sha256.Sum256(body)
	}
	return sha256.Sum256(canonical)
}

// transactWriteItems answers TransactWriteItems, honouring
// ClientRequestToken: it applies the transaction action by action (see
// applyTransaction), or with DisableItemTransactions leaves it to minidyn
// and amends the cancellation reasons.
func (f *front) transactWriteItems(ctx context.Context, header http.Header, body []byte) *response {
	var req transactRequest
	if err := json.Unmarshal(body, &req); err != nil {
		// Let minidyn report the malformed request.
		return call(ctx, f.inner, "TransactWriteItems", header, body)
	}

	useToken := !f.opts.DisableClientRequestToken && req.ClientRequestToken != nil
	var digest [sha256.Size]byte
	if useToken {
		token := *req.ClientRequestToken
		switch {
		case token == "":
			return validationErrors([]string{minLength(token, "clientRequestToken", 1)})
		case len(token) > maxClientRequestTokenLength:
			return validationErrors([]string{"Value '" + token + "' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36"})
		}
		digest = requestDigest(body)
		if rec, ok := f.tokens.lookup(token, f.opts.Now()); ok {
			if rec.digest != digest {
				return errorResponse(http.StatusBadRequest, codeIdempotentMismatch,
					"The request uses the same client token as a previous, but non-identical request.")
			}
			return jsonResponse(struct{}{})
		}
	}

	var resp *response
	if f.opts.DisableItemTransactions {
		resp = f.minidynTransaction(ctx, header, body, &req)
	} else {
		resp = f.applyTransaction(ctx, header, body, &req)
	}
	if resp.ok() && useToken {
		f.tokens.add(*req.ClientRequestToken, tokenRecord{digest: digest, expires: f.opts.Now().Add(ClientRequestTokenWindow)})
	}
	return resp
}
