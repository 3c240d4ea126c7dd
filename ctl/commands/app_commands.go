package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"drover.dev/bbs/jsonapi"
	"drover.dev/bbs/models"
	"drover.dev/ctl/output"
	"drover.dev/ctl/push"
	bbsv1 "drover.dev/proto/gen/drover/bbs/v1"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
)

// appArgHelp explains what an APP argument may be.
const appArgHelp = "APP is an app's name (as pushed with 'droverctl push --name') or a process guid;\n" +
	"a process guid of domain apps wins over an app name, and an app name over the\n" +
	"process guid of an LRP outside domain apps."

func appsCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "apps", GroupID: groupApps, Args: exactArgs(),
		Short: "List the pushed apps: version, running/desired instances, routes, last push",
		Long: "One row per app pushed with 'droverctl push' (the LRPs <app guid>-<version> of\n" +
			"domain apps). VERSION lists every version desired, newest first (two while a push\n" +
			"or restart replaces one); INSTANCES counts the RUNNING instances of the newest\n" +
			"and how many it desires.",
		Example: examples("apps", "apps --json | jq -r .name"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, _ []string) error {
		lrps, err := pushBBS{s: s}.DesiredLRPs(ctx, push.AppsDomain)
		if err != nil {
			return err
		}
		actuals, err := listActualLRPs(ctx, s, &bbsv1.ListActualLRPsRequest{Domain: push.AppsDomain})
		if err != nil {
			return err
		}
		var rows []output.AppRow
		for _, a := range push.Apps(lrps) {
			rows = append(rows, appRow(a, actuals))
		}
		return printList(s, output.AppTable(rows, s.now()), rows, infallible(output.AppView))
	})
	return cmd
}

func appCommand(ctl *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use: "app APP", GroupID: groupApps, Args: exactArgs("APP"),
		Short: "Show one app: its instances with state, cell, crashes and reason, and recent events",
		Long: "APP is an app's name or the process guid of one of its versions. The instances\n" +
			"of every version are listed with the reason of their last crash (or why they are\n" +
			"not placed); the recent events are the app's among the newest " + fmt.Sprint(recentEventWindow) + " BBS events\n" +
			"(at most " + fmt.Sprint(recentEventLimit) + "). --json prints the app, then each instance, then each event,\n" +
			"one JSON object per line.",
		Example: examples("app hello", "app hello --json | jq -c 'select(.crash_reason)'"),
	}
	cmd.RunE = ctl.run(func(ctx context.Context, s *session, args []string) error {
		lrps, err := pushBBS{s: s}.DesiredLRPs(ctx, push.AppsDomain)
		if err != nil {
			return err
		}
		app, ok := findApp(lrps, args[0])
		if !ok {
			return models.NewError(models.ErrTypeResourceNotFound, "no app %s in domain %s", args[0], push.AppsDomain)
		}
		var instances []*modelsv1.ActualLRP
		for _, guid := range app.ProcessGUIDs() {
			a, err := listActualLRPs(ctx, s, &bbsv1.ListActualLRPsRequest{ProcessGuid: guid})
			if err != nil {
				return err
			}
			instances = append(instances, a...)
		}
		events, eventsErr := s.recentEvents(ctx, func(e *modelsv1.Event) bool {
			appGUID, _, ok := push.SplitProcessGUID(models.EventProcessGUID(e))
			return ok && appGUID == app.GUID
		}, recentEventWindow, recentEventLimit)
		return s.printApp(appRow(app, instances), instances, events, eventsErr)
	})
	return cmd
}

// findApp finds the app arg names: by a version's process guid, else by name.
func findApp(lrps []*modelsv1.DesiredLRP, arg string) (push.AppInfo, bool) {
	if appGUID, _, ok := push.SplitProcessGUID(arg); ok {
		for _, a := range push.Apps(lrps) {
			if a.GUID == appGUID {
				return a, true
			}
		}
	}
	return push.FindApp(lrps, arg)
}

// printApp renders an app, its instances and its recent events (or why they could
// not be read: the rest is shown anyway).
func (s *session) printApp(row output.AppRow, instances []*modelsv1.ActualLRP, events []*modelsv1.Event, eventsErr error) error {
	if s.json() {
		if err := s.jsonLine(output.AppView(row)); err != nil {
			return err
		}
		for _, a := range instances {
			if err := s.jsonLine(jsonapi.ActualLRPView(a)); err != nil {
				return err
			}
		}
		for _, e := range events {
			view, err := jsonapi.EventView(e)
			if err != nil {
				return err
			}
			if err := s.jsonLine(view); err != nil {
				return err
			}
		}
	} else {
		if err := s.render(output.AppProperties(row, s.now())); err != nil {
			return err
		}
		fmt.Fprintln(s.stdout)
		if err := s.render(output.AppInstanceTable(instances, s.now())); err != nil {
			return err
		}
		fmt.Fprintln(s.stdout, "\nRecent events:")
		if len(events) == 0 && eventsErr == nil {
			fmt.Fprintln(s.stdout, "  none")
		}
		for _, e := range events {
			fmt.Fprintln(s.stdout, "  "+output.EventLine(e))
		}
	}
	if eventsErr != nil {
		fmt.Fprintf(s.stderr, "droverctl: warning: recent events: %s\n", output.Printable(s.describeError(eventsErr).Error()))
	}
	return nil
}

// appRow summarises an app with the instances of its newest version among actuals.
func appRow(a push.AppInfo, actuals []*modelsv1.ActualLRP) output.AppRow {
	current := a.Current()
	row := output.AppRow{
		Name: a.Name, GUID: a.GUID, ProcessGUIDs: a.ProcessGUIDs(),
		Desired:   current.LRP.GetInstances(),
		Hostnames: push.Hostnames(current.LRP),
		LastPush:  current.PushedAt(),
		Current:   current.LRP,
	}
	for _, v := range a.Versions {
		row.Versions = append(row.Versions, v.Version)
	}
	row.Running = runningInstances(actuals, current.LRP.GetProcessGuid(), row.Desired)
	return row
}

// runningInstances counts the indices below desired of guid with a RUNNING instance
// (an evacuating copy counts for its index).
func runningInstances(actuals []*modelsv1.ActualLRP, guid string, desired int32) int32 {
	running := map[int32]bool{}
	for _, a := range actuals {
		if a.GetProcessGuid() == guid && a.GetIndex() < desired && a.GetState() == modelsv1.ActualLRPState_ACTUAL_LRP_STATE_RUNNING {
			running[a.GetIndex()] = true
		}
	}
	return int32(len(running))
}

// appTarget is what an APP argument names: process guids, newest version first.
type appTarget struct {
	arg string
	// app is the app arg names, nil when arg is taken as a process guid.
	app   *push.AppInfo
	guids []string
	// lrps are the desired LRPs of domain apps, as listed to resolve arg.
	lrps []*modelsv1.DesiredLRP
}

// resolveApp reads arg as a process guid of domain apps, else as an app's name, else
// as a process guid of another domain (the BBS then answers for it).
func (s *session) resolveApp(ctx context.Context, arg string) (appTarget, error) {
	lrps, err := pushBBS{s: s}.DesiredLRPs(ctx, push.AppsDomain)
	if err != nil {
		return appTarget{}, err
	}
	t := appTarget{arg: arg, guids: []string{arg}, lrps: lrps}
	for _, lrp := range lrps {
		if lrp.GetProcessGuid() == arg {
			return t, nil
		}
	}
	if app, ok := push.FindApp(lrps, arg); ok {
		t.app, t.guids = &app, app.ProcessGUIDs()
	}
	return t, nil
}

// single is the one process guid of the target; an app with several versions (a push
// or restart is replacing one) is refused, naming them.
func (t appTarget) single() (string, error) {
	if len(t.guids) == 1 {
		return t.guids[0], nil
	}
	return "", models.NewError(models.ErrTypeInvalidRequest,
		"app %s has %d versions (%s): a push or restart is replacing one; wait for it, or name a process guid",
		t.arg, len(t.guids), strings.Join(t.guids, ", "))
}

// describe names the target for confirmations: "app NAME (GUID)" or the guid.
func (t appTarget) describe() string {
	if t.app == nil {
		return t.arg
	}
	return fmt.Sprintf("app %s (%s)", t.arg, strings.Join(t.guids, ", "))
}

// lrp is the desired LRP of guid among those listed to resolve the target.
func (t appTarget) lrp(guid string) *modelsv1.DesiredLRP {
	for _, lrp := range t.lrps {
		if lrp.GetProcessGuid() == guid {
			return lrp
		}
	}
	return nil
}
