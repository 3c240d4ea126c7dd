package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
)

// errNoClient answers every call of a gateway built without a BBS client.
var errNoClient = models.NewError(models.ErrTypeUnavailable, "the BBS client is not configured")

// bodyTooLargeError is a request body over Options.MaxBodyBytes.
type bodyTooLargeError struct{ limit int64 }

func (e *bodyTooLargeError) Error() string {
	return fmt.Sprintf("request body exceeds the limit of %d bytes", e.limit)
}

// typeResourceExhausted is the error type of a 429: a gRPC RESOURCE_EXHAUSTED, which
// has no BBS error type.
const typeResourceExhausted = "ResourceExhausted"

// emptyObject is the body of a successful write: {}.
var emptyObject = struct{}{}

// statusFor maps a BBS error type to its HTTP status.
func statusFor(t models.ErrorType) int {
	switch t {
	case models.ErrTypeInvalidRequest, models.ErrTypeInvalidJSON:
		return http.StatusBadRequest
	case models.ErrTypeResourceNotFound:
		return http.StatusNotFound
	case models.ErrTypeResourceExists, models.ErrTypeResourceConflict, models.ErrTypeInvalidStateTransition,
		models.ErrTypeRunningOnDifferentCell, models.ErrTypeLockCollision:
		return http.StatusConflict
	case models.ErrTypeResyncRequired:
		return http.StatusGone
	case models.ErrTypeUnavailable:
		return http.StatusServiceUnavailable
	case models.ErrTypeUnauthorized:
		return http.StatusForbidden
	default:
		return http.StatusInternalServerError
	}
}

// errorResponse is the status and JSON body that answer err.
func errorResponse(err error) (int, jsonapi.Error) {
	var tooLarge *bodyTooLargeError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge, errorBody(models.ErrTypeInvalidRequest, tooLarge.Error())
	}
	if status.Code(err) == codes.ResourceExhausted { // a cap, such as event streams per caller
		return http.StatusTooManyRequests, jsonapi.Error{Type: typeResourceExhausted, Message: status.Convert(err).Message()}
	}
	body := jsonapi.ErrorView(err)
	return statusFor(models.ErrorType(body.Type)), body
}

// writeError answers a failed request; server-side failures are logged.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := errorResponse(err)
	if status >= http.StatusInternalServerError {
		a.log.Error("bbs-call-failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	}
	a.writeJSON(w, status, body)
}

// writeJSON writes v as the JSON response with the given status.
func (a *api) writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		a.log.Error("failed-to-encode-response", "error", err.Error())
		status = http.StatusInternalServerError
		data, _ = json.Marshal(errorBody(models.ErrTypeUnknown, "failed to encode the response"))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// readBody reads the whole request body, refusing more than MaxBodyBytes.
func (a *api) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := a.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, &bodyTooLargeError{limit: limit}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var maxBytes *http.MaxBytesError
	if errors.As(err, &maxBytes) {
		return nil, &bodyTooLargeError{limit: limit}
	}
	if err != nil {
		return nil, models.NewError(models.ErrTypeInvalidRequest, "reading the request body: %v", err)
	}
	return data, nil
}

// errorBody is the JSON body of an error of type t.
func errorBody(t models.ErrorType, message string) jsonapi.Error {
	return jsonapi.Error{Type: string(t), Message: message}
}
