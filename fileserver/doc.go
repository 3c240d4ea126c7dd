// Package fileserver is drover's blob server: static lifecycle bundles under
// /v1/static/, signed uploads and downloads of app packages and droplets, and resource
// matching so that clients upload only the files the server does not have yet.
package fileserver
