package push

import "drover.dev/fileserver/client"

// Resource is one file of the app, as the fileserver client lists it.
type Resource = client.Resource

// Package is an uploaded package, as the fileserver reports it.
type Package = client.Package
