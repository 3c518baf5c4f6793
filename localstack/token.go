package localstack

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"
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
// ClientRequestToken, in a canonical form (see canonicalizer.request). Two
// requests have the same digest when they carry the same parameters,
// whatever order the client wrote them in.
func requestDigest(body []byte) [sha256.Size]byte {
	c := canonicalizers.Get().(*canonicalizer)
	canonical, ok := c.request(c.out[:0], body)
	var sum [sha256.Size]byte
	if ok {
		sum = sha256.Sum256(canonical)
	} else {
		sum = sha256.Sum256(body)
	}
	if cap(canonical) <= maxKeptCanonical && cap(c.scratch) <= maxKeptCanonical {
		c.out = canonical[:0]
		canonicalizers.Put(c)
	}
	return sum
}

// canonicalizers keeps the scratch space of requestDigest between calls:
// the front computes a digest for every TransactWriteItems that carries a
// ClientRequestToken. Buffers grown beyond maxKeptCanonical bytes by a
// large request are left to the garbage collector.
var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

const maxKeptCanonical = 64 << 10

// transactWriteItems answers TransactWriteItems, honouring
// ClientRequestToken: it applies the transaction action by action (see
// applyTransaction), or with DisableItemTransactions leaves it to minidyn
// and amends the cancellation reasons.
func (f *front) transactWriteItems(ctx context.Context, header http.Header, body []byte, in *transactInput) *response {
	if in == nil {
		in = f.decodeTransaction(body)
	}
	if in.err != nil {
		// Let minidyn report the malformed request.
		return call(ctx, f.inner, "TransactWriteItems", header, body)
	}
	req := &in.req
	useToken := !f.opts.DisableClientRequestToken && req.ClientRequestToken != nil
	digest := in.digest
	if useToken {
		token := *req.ClientRequestToken
		switch {
		case token == "":
			return validationErrors([]string{minLength(token, "clientRequestToken", 1)})
		case len(token) > maxClientRequestTokenLength:
			return validationErrors([]string{"Value '" + token + "' at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36"})
		}
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
		resp = f.minidynTransaction(ctx, header, body)
	} else {
		resp = f.applyTransaction(ctx, header, body, req)
	}
	if resp.ok() && useToken {
		f.tokens.add(*req.ClientRequestToken, tokenRecord{digest: digest, expires: f.opts.Now().Add(ClientRequestTokenWindow)})
	}
	return resp
}

// transactInput is a TransactWriteItems request as the front decodes it
// before taking its lock: the parts it uses, each action decoded as the
// single-item request that applies it, and the digest of the request for
// its ClientRequestToken.
type transactInput struct {
	req    itemTransaction
	err    error // of decoding the request
	digest [sha256.Size]byte
}

// decodeTransaction decodes a TransactWriteItems request. It needs no lock.
func (f *front) decodeTransaction(body []byte) *transactInput {
	in := new(transactInput)
	if !fastDecodeTransaction(body, &in.req) {
		in.req = itemTransaction{}
		if in.err = json.Unmarshal(body, &in.req); in.err != nil {
			return in
		}
	}
	if t := in.req.ClientRequestToken; t != nil && !f.opts.DisableClientRequestToken && *t != "" && len(*t) <= maxClientRequestTokenLength {
		in.digest = requestDigest(body)
	}
	return in
}
