package grpc

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemkey/idemkey"
	"github.com/idemkey/idemkey/grpc/internal/testpb"
)

func TestStoredResponsesOfOtherFrontDoorsNeverDecodeAsAnswers(t *testing.T) {
	good, err := encodeAnswer(&testpb.ChargeReply{Id: "x"}, nil, nil, nil)
	require.NoError(t, err)
	for name, r := range map[string]idemkey.Response{
		"HTTP JSON":        {Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"x"}`)},
		"Lambda output":    {Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: good.Body},
		"HTTP 404":         {Status: 404, Header: http.Header{"Content-Type": {answerContentType}}, Body: good.Body},
		"unknown code":     {Status: statusCodeBase + 99, Header: http.Header{"Content-Type": {answerContentType}}, Body: good.Body},
		"not an envelope":  {Status: 200, Header: http.Header{"Content-Type": {answerContentType}}, Body: []byte("\xff\xff")},
		"code disagrees":   {Status: statusCodeBase + int(codes.NotFound), Header: http.Header{"Content-Type": {answerContentType}}, Body: good.Body},
		"no header at all": {Status: 200, Body: good.Body},
	} {
		_, err := decodeAnswer(r)
		assert.ErrorIs(t, err, errNotAnswer, name)
	}
	omitted := good
	omitted.Body, omitted.BodyOmitted = nil, 5000
	_, err = decodeAnswer(omitted)
	assert.ErrorIs(t, err, errAnswerOmitted)
	assert.Equal(t, codes.DataLoss, status.Code(statusOf(err)))
}

func TestAnswersRoundTripWithoutReservedMetadata(t *testing.T) {
	hdr := metadata.MD{"x-a": {"1", "2"}, "grpc-status": {"0"}, "content-type": {"x"}, ReplayedMetadata: {"true"}, "x-b-bin": {"\x00"}}
	r, err := encodeAnswer(&testpb.ChargeReply{Id: "x", Cents: 3}, nil, hdr, metadata.Pairs("x-t", "t"))
	require.NoError(t, err)
	a, err := decodeAnswer(r)
	require.NoError(t, err)
	assert.True(t, proto.Equal(&testpb.ChargeReply{Id: "x", Cents: 3}, a.resp))
	assert.Equal(t, metadata.MD{"x-a": {"1", "2"}, "x-b-bin": {"\x00"}}, a.header)
	assert.Equal(t, metadata.MD{"x-t": {"t"}}, a.trailer)

	r, err = encodeAnswer(nil, status.Error(codes.AlreadyExists, "dup"), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, statusCodeBase+int(codes.AlreadyExists), r.Status)
	a, err = decodeAnswer(r)
	require.NoError(t, err)
	assert.Equal(t, codes.AlreadyExists, status.Code(a.err))

	r, err = encodeAnswer(nil, assert.AnError, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, statusCodeBase+int(codes.Unknown), r.Status, "a plain error is Unknown, as gRPC sends it")
	_, err = encodeAnswer("not a message", nil, nil, nil)
	assert.Error(t, err)
}
