package push

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// AppVersion is a desired LRP read back as one version of a pushed app.
type AppVersion struct {
	LRP     *modelsv1.DesiredLRP
	AppGUID string
	Version string
	// Annotation is the LRP's annotation; zero when it is not push's JSON.
	Annotation LRPAnnotation
}

// Name is the app's name from the annotation, "" when the annotation does not name
// the app of the guid.
func (v AppVersion) Name() string {
	if n := v.Annotation.AppName; n != "" && AppGUID(n) == v.AppGUID {
		return n
	}
	return ""
}

// PushedAt is when the version was pushed: the annotation's stamp, else the LRP's
// creation; zero when neither is known.
func (v AppVersion) PushedAt() time.Time {
	if t, err := time.Parse(time.RFC3339Nano, v.Annotation.PushedAt); err == nil {
		return t
	}
	if at := v.LRP.GetCreatedAt(); at != 0 {
		return time.Unix(0, at)
	}
	return time.Time{}
}

// SplitProcessGUID splits "<app guid>-<version>" (a UUID and 8 hex digits).
func SplitProcessGUID(processGUID string) (appGUID, version string, ok bool) {
	i := strings.LastIndexByte(processGUID, '-')
	if i < 0 {
		return "", "", false
	}
	appGUID, version = processGUID[:i], processGUID[i+1:]
	if !IsVersionOf(processGUID, appGUID) {
		return "", "", false
	}
	if u, err := uuid.Parse(appGUID); err != nil || u.String() != appGUID {
		return "", "", false
	}
	return appGUID, version, true
}

// ParseAppVersion reads lrp as a version of a pushed app; false when its process guid
// is not "<app guid>-<version>".
func ParseAppVersion(lrp *modelsv1.DesiredLRP) (AppVersion, bool) {
	appGUID, version, ok := SplitProcessGUID(lrp.GetProcessGuid())
	if !ok {
		return AppVersion{}, false
	}
	v := AppVersion{LRP: lrp, AppGUID: appGUID, Version: version}
	if err := json.Unmarshal([]byte(lrp.GetAnnotation()), &v.Annotation); err != nil {
		v.Annotation = LRPAnnotation{}
	}
	return v, true
}

// AppInfo is one app: its versions, newest push first (more than one while a push or
// restart replaces a version, or after one failed half-way).
type AppInfo struct {
	// Name is "" when no version's annotation names the app.
	Name     string
	GUID     string
	Versions []AppVersion
}

// Current is the version that serves: the newest.
func (a AppInfo) Current() AppVersion { return a.Versions[0] }

// ProcessGUIDs lists the versions' process guids, newest first.
func (a AppInfo) ProcessGUIDs() []string {
	out := make([]string, len(a.Versions))
	for i, v := range a.Versions {
		out[i] = v.LRP.GetProcessGuid()
	}
	return out
}

// Apps groups the app versions among lrps by app, sorted by name then guid; LRPs
// that are no app version are left out.
func Apps(lrps []*modelsv1.DesiredLRP) []AppInfo {
	byGUID := map[string]*AppInfo{}
	for _, lrp := range lrps {
		v, ok := ParseAppVersion(lrp)
		if !ok {
			continue
		}
		a := byGUID[v.AppGUID]
		if a == nil {
			a = &AppInfo{GUID: v.AppGUID}
			byGUID[v.AppGUID] = a
		}
		a.Versions = append(a.Versions, v)
		if a.Name == "" {
			a.Name = v.Name()
		}
	}
	apps := make([]AppInfo, 0, len(byGUID))
	for _, a := range byGUID {
		sortVersions(a.Versions)
		apps = append(apps, *a)
	}
	slices.SortFunc(apps, func(a, b AppInfo) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.GUID, b.GUID)) })
	return apps
}

// FindApp returns the app named name among lrps.
func FindApp(lrps []*modelsv1.DesiredLRP, name string) (AppInfo, bool) {
	guid := AppGUID(name)
	for _, a := range Apps(lrps) {
		if a.GUID == guid {
			if a.Name == "" {
				a.Name = name
			}
			return a, true
		}
	}
	return AppInfo{}, false
}

// sortVersions orders versions newest push first (then by creation, then guid).
func sortVersions(vs []AppVersion) {
	slices.SortStableFunc(vs, func(a, b AppVersion) int {
		return cmp.Or(
			b.PushedAt().Compare(a.PushedAt()),
			cmp.Compare(b.LRP.GetCreatedAt(), a.LRP.GetCreatedAt()),
			cmp.Compare(a.LRP.GetProcessGuid(), b.LRP.GetProcessGuid()),
		)
	})
}

// CurrentVersion is the LRP a push of processGUID carries settings over from (the
// instance count, allow_ssh): processGUID's own LRP when desired, else the newest
// other version of appGUID; nil for a first push.
func CurrentVersion(lrps []*modelsv1.DesiredLRP, appGUID, processGUID string) *modelsv1.DesiredLRP {
	var versions []AppVersion
	for _, lrp := range lrps {
		if lrp.GetProcessGuid() == processGUID {
			return lrp
		}
		if v, ok := ParseAppVersion(lrp); ok && v.AppGUID == appGUID {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return nil
	}
	sortVersions(versions)
	return versions[0].LRP
}

// StampPushedAt sets pushed_at in a JSON annotation, keeping its other fields; an
// annotation that is not a JSON object is returned unchanged.
func StampPushedAt(annotation string, at time.Time) string {
	return setAnnotationField(annotation, "pushed_at", at.UTC().Format(time.RFC3339Nano))
}

// setAnnotationField sets one string field of a JSON object annotation.
func setAnnotationField(annotation, name, value string) string {
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(annotation), &fields); err != nil || fields == nil {
		return annotation
	}
	raw, _ := json.Marshal(value) // a string cannot fail
	fields[name] = raw
	out, err := json.Marshal(fields)
	if err != nil {
		return annotation
	}
	return string(out)
}

// Hostnames lists the hostnames of an LRP's cf-router routes, in order.
func Hostnames(lrp *modelsv1.DesiredLRP) []string {
	var out []string
	for _, route := range lrp.GetRoutes()[RouterName].GetListValue().GetValues() {
		for _, h := range route.GetStructValue().GetFields()["hostnames"].GetListValue().GetValues() {
			if name := h.GetStringValue(); name != "" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}
