package models

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorType names a kind of failure the way Diego does; it survives the gRPC hop as
// the ErrorInfo reason and becomes the "type" of HTTP JSON errors.
type ErrorType string

// The error types the BBS returns.
const (
	ErrTypeInvalidRequest         ErrorType = "InvalidRequest"
	ErrTypeInvalidJSON            ErrorType = "InvalidJSON"
	ErrTypeResourceNotFound       ErrorType = "ResourceNotFound"
	ErrTypeResourceExists         ErrorType = "ResourceExists"
	ErrTypeResourceConflict       ErrorType = "ResourceConflict"
	ErrTypeInvalidStateTransition ErrorType = "InvalidStateTransition"
	ErrTypeRunningOnDifferentCell ErrorType = "RunningOnDifferentCell"
	ErrTypeLockCollision          ErrorType = "LockCollision"
	ErrTypeResyncRequired         ErrorType = "ResyncRequired"
	ErrTypeUnavailable            ErrorType = "Unavailable"
	ErrTypeUnauthorized           ErrorType = "Unauthorized"
	ErrTypeUnknown                ErrorType = "UnknownError"
)

// errorDomain is the ErrorInfo domain of every BBS error.
const errorDomain = "bbs.drover.dev"

// Error is a typed BBS error. Two Errors match with errors.Is when their types match.
type Error struct {
	Type    ErrorType
	Message string
}

// Sentinels to compare against with errors.Is.
var (
	ErrResourceNotFound       = &Error{Type: ErrTypeResourceNotFound, Message: "the requested resource could not be found"}
	ErrResourceExists         = &Error{Type: ErrTypeResourceExists, Message: "the requested resource already exists"}
	ErrResourceConflict       = &Error{Type: ErrTypeResourceConflict, Message: "the request conflicts with the current state of the resource"}
	ErrInvalidStateTransition = &Error{Type: ErrTypeInvalidStateTransition, Message: "the state transition is not allowed"}
	ErrRunningOnDifferentCell = &Error{Type: ErrTypeRunningOnDifferentCell, Message: "running on a different cell"}
	ErrLockCollision          = &Error{Type: ErrTypeLockCollision, Message: "the lock is held by another owner"}
	ErrResyncRequired         = &Error{Type: ErrTypeResyncRequired, Message: "the requested events are no longer retained; resync and subscribe again"}
)

// NewError makes an Error of the given type with a formatted message.
func NewError(t ErrorType, format string, args ...any) *Error {
	return &Error{Type: t, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Message }

// Is reports whether target is an *Error of the same type.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Type == e.Type
}

// Code is the gRPC code for the error's type.
func (e *Error) Code() codes.Code {
	switch e.Type {
	case ErrTypeInvalidRequest, ErrTypeInvalidJSON:
		return codes.InvalidArgument
	case ErrTypeResourceNotFound:
		return codes.NotFound
	case ErrTypeResourceExists:
		return codes.AlreadyExists
	case ErrTypeResourceConflict, ErrTypeLockCollision:
		return codes.Aborted
	case ErrTypeInvalidStateTransition, ErrTypeRunningOnDifferentCell:
		return codes.FailedPrecondition
	case ErrTypeResyncRequired:
		return codes.OutOfRange
	case ErrTypeUnavailable:
		return codes.Unavailable
	case ErrTypeUnauthorized:
		return codes.PermissionDenied
	default:
		return codes.Unknown
	}
}

// GRPCStatus lets status.FromError and the gRPC server turn an Error into a status
// that carries the type as an ErrorInfo reason.
func (e *Error) GRPCStatus() *status.Status {
	st := status.New(e.Code(), e.Message)
	if withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: string(e.Type), Domain: errorDomain}); err == nil {
		return withInfo
	}
	return st
}

// FromError recovers an *Error from an error, including one that crossed gRPC.
// Errors that carry no type become UnknownError (or a type derived from the gRPC code).
func FromError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	st, ok := status.FromError(err)
	if !ok {
		return &Error{Type: ErrTypeUnknown, Message: err.Error()}
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			return &Error{Type: ErrorType(info.GetReason()), Message: st.Message()}
		}
	}
	return &Error{Type: typeForCode(st.Code()), Message: st.Message()}
}

func typeForCode(c codes.Code) ErrorType {
	switch c {
	case codes.InvalidArgument:
		return ErrTypeInvalidRequest
	case codes.NotFound:
		return ErrTypeResourceNotFound
	case codes.AlreadyExists:
		return ErrTypeResourceExists
	case codes.Aborted:
		return ErrTypeResourceConflict
	case codes.FailedPrecondition:
		return ErrTypeInvalidStateTransition
	case codes.OutOfRange:
		return ErrTypeResyncRequired
	case codes.Unavailable, codes.DeadlineExceeded:
		return ErrTypeUnavailable
	case codes.PermissionDenied, codes.Unauthenticated:
		return ErrTypeUnauthorized
	default:
		return ErrTypeUnknown
	}
}
