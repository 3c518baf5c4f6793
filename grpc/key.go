package grpc

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/idemkey/idemkey/handler"
)

// KeyMetadata is the request metadata key that carries the idempotency
// key. Its value has the syntax of the HTTP Idempotency-Key header (see
// handler.ParseKey): an RFC 8941 sf-string or a bare token, 1 to
// handler.MaxKeyLength printable ASCII characters.
const KeyMetadata = "idempotency-key"

// ReplayedMetadata is the header metadata key set to "true" on a replay.
const ReplayedMetadata = "idempotent-replayed"

var (
	// errMissingKey: a guarded call carries no key, neither in its
	// metadata nor in its request message's key field.
	errMissingKey = errors.New("grpc: missing idempotency key")
	// errInvalidKey: the call's key is malformed, repeated, or given twice
	// with different values.
	errInvalidKey = errors.New("grpc: invalid idempotency key")
)

// keyError says why a call's idempotency key was rejected.
type keyError struct{ Reason string }

func (e *keyError) Error() string   { return errInvalidKey.Error() + ": " + e.Reason }
func (e *keyError) Is(t error) bool { return t == errInvalidKey }

// keyField locates the key of a request message: a string field holding
// the key itself, or a message field (AEP-155's aep.api.IdempotencyKey)
// whose string field "key" holds it.
type keyField struct {
	field protoreflect.FieldDescriptor // in the request message
	inner protoreflect.FieldDescriptor // "key" of the message field; nil for a string field
}

// resolveKeyField finds the request message of fullMethod ("/pkg.Service/Method")
// in the global registry and its field name. It returns an error that
// names what is missing or of the wrong kind.
func resolveKeyField(fullMethod, name string) (keyField, error) {
	md, err := findMethod(fullMethod)
	if err != nil {
		return keyField{}, err
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return keyField{}, fmt.Errorf("%s is a streaming method: a stream cannot be replayed", fullMethod)
	}
	f := md.Input().Fields().ByName(protoreflect.Name(name))
	switch {
	case f == nil:
		return keyField{}, fmt.Errorf("request message %s of %q has no field %q", md.Input().FullName(), fullMethod, name)
	case f.IsList() || f.IsMap():
		return keyField{}, fmt.Errorf("key field %s is repeated", f.FullName())
	case f.Kind() == protoreflect.StringKind:
		return keyField{field: f}, nil
	case f.Kind() == protoreflect.MessageKind:
		inner := f.Message().Fields().ByName("key")
		if inner == nil || inner.Kind() != protoreflect.StringKind || inner.IsList() {
			return keyField{}, fmt.Errorf("key field %s is a message (%s) without a string field \"key\"", f.FullName(), f.Message().FullName())
		}
		return keyField{field: f, inner: inner}, nil
	}
	return keyField{}, fmt.Errorf("key field %s is neither a string nor a message", f.FullName())
}

// resolveKeyFields resolves each entry of names, the option named option,
// and panics with the option's name and the reason when one fails.
func resolveKeyFields(option string, names map[string]string) map[string]keyField {
	fields := make(map[string]keyField, len(names))
	for m, name := range names {
		f, err := resolveKeyField(m, name)
		if err != nil {
			panic("grpc: " + option + ": " + err.Error())
		}
		fields[m] = f
	}
	return fields
}

// findMethod finds the method fullMethod ("/pkg.Service/Method") names in
// the global registry. It returns an error that names what is missing.
func findMethod(fullMethod string) (protoreflect.MethodDescriptor, error) {
	svc, method, ok := splitMethod(fullMethod)
	if !ok {
		return nil, fmt.Errorf("%q is not a full method name (/package.Service/Method)", fullMethod)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("service %s of %q is not registered (import its generated package): %w", svc, fullMethod, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s of %q is not a service", svc, fullMethod)
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil, fmt.Errorf("service %s has no method %s", svc, method)
	}
	return md, nil
}

// splitMethod splits "/pkg.Service/Method" into its service and method.
func splitMethod(fullMethod string) (service, method string, ok bool) {
	rest, ok := strings.CutPrefix(fullMethod, "/")
	if !ok {
		return "", "", false
	}
	service, method, ok = strings.Cut(rest, "/")
	return service, method, ok && service != "" && method != "" && !strings.Contains(method, "/")
}

// extract returns the key the message holds ("" when the field is unset
// or empty) and a copy of the message without it, which is what the
// fingerprint covers. A message field left empty by clearing its key is
// cleared too, so a request that sends an empty key message and one that
// sends none are the same request. The message must be of the field's
// message type.
func (k keyField) extract(m proto.Message) (string, proto.Message) {
	r := m.ProtoReflect()
	if r.Descriptor() != k.field.ContainingMessage() || !r.Has(k.field) {
		return "", m
	}
	c := proto.Clone(m).ProtoReflect()
	if k.inner == nil {
		key := r.Get(k.field).String()
		c.Clear(k.field)
		return key, c.Interface()
	}
	key := r.Get(k.field).Message().Get(k.inner).String()
	sub := c.Mutable(k.field).Message()
	sub.Clear(k.inner)
	if proto.Size(sub.Interface()) == 0 {
		c.Clear(k.field)
	}
	return key, c.Interface()
}

// keyOf returns the call's key: from the message field when it holds one,
// else from the metadata. A key in both places must be the same key.
// found is false, with a nil error, when neither holds one.
func keyOf(md metadata.MD, fromMessage string) (key string, found bool, err error) {
	values := md.Get(KeyMetadata)
	if len(values) > 1 {
		return "", false, &keyError{Reason: "the call carries more than one " + KeyMetadata + " metadata value"}
	}
	var fromMD string
	if len(values) == 1 {
		if fromMD, err = handler.ParseKey(values[0]); err != nil {
			return "", false, &keyError{Reason: reasonOf(err)}
		}
	}
	if fromMessage != "" {
		// The same limits as the metadata's, checked by the same parser.
		k, err := handler.ParseKey(quote(fromMessage))
		if err != nil {
			return "", false, &keyError{Reason: "the request message's key: " + reasonOf(err)}
		}
		if len(values) == 1 && fromMD != k {
			return "", false, &keyError{Reason: "the request message and the " + KeyMetadata + " metadata carry different keys " +
				"(a client interceptor that adds a key to every call must be given the method's key field: ClientOptions.KeyFields)"}
		}
		return k, true, nil
	}
	return fromMD, len(values) == 1, nil
}

func reasonOf(err error) string {
	var ke *handler.KeyError
	if errors.As(err, &ke) {
		return ke.Reason
	}
	return err.Error()
}

// quote encodes key as an RFC 8941 sf-string: a bare token when it is
// one, else quoted with \" and \\ escapes. Characters outside printable
// ASCII are kept, for the parser to refuse.
func quote(key string) string {
	bare := key != ""
	for i := 0; i < len(key) && bare; i++ {
		c := key[i]
		bare = c > 0x20 && c <= 0x7e && c != '"' && c != '\\' && c != ','
	}
	if bare {
		return key
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if key[i] == '"' || key[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}
