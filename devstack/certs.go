package devstack

import (
	"crypto/tls"
	"path/filepath"

	bbsconfig "drover.dev/bbs/config"
	"drover.dev/lib/devcerts"
	"drover.dev/lib/tlsconfig"
)

// Certs is a directory written by devcerts.WriteDevCerts.
type Certs struct {
	Dir string `json:"dir"`
	// SANs, when it names a certificate ("bbs", "auctioneer", "rep-cell-1", ...), are its
	// hosts instead of the single-host ones (a multi-host stack's: the host's IP).
	SANs map[string][]string `json:"sans,omitempty"` // multihost
}

// hostsFor are the SANs of the certificate name: SANs[name] when set, else def.
func (c Certs) hostsFor(name string, def []string) []string { // multihost
	if h, ok := c.SANs[name]; ok {
		return h
	}
	return def
}

// Ensure writes the CA, BBS and client certificates that are missing or expiring.
func (c Certs) Ensure() error {
	if _, ok := c.SANs["bbs"]; !ok {
		return devcerts.WriteDevCerts(c.Dir)
	}
	// multihost: the BBS certificate names the control host.
	ca, err := devcerts.LoadOrCreateCA(c.Dir)
	if err != nil {
		return err
	}
	if err := devcerts.EnsureCert(ca, c.Dir, "bbs", devcerts.BBSCommonName, c.SANs["bbs"]); err != nil {
		return err
	}
	return devcerts.EnsureCert(ca, c.Dir, "client", devcerts.ClientCommonName, nil)
}

// AuctioneerCommonName is the common name of the auctioneer's certificate.
const AuctioneerCommonName = "auctioneer"

// componentHosts are the SANs of the auctioneer's and reps' certificates.
var componentHosts = []string{"127.0.0.1", "localhost"}

// ConvergerCommonName is the common name of the converger's certificate.
const ConvergerCommonName = "converger"

// EnsureConverger writes the converger's certificate (server and client use).
func (c Certs) EnsureConverger() error {
	ca, err := devcerts.LoadOrCreateCA(c.Dir)
	if err != nil {
		return err
	}
	return devcerts.EnsureCert(ca, c.Dir, "converger", ConvergerCommonName, c.hostsFor("converger", componentHosts))
}

// EnsureCells writes the auctioneer's certificate and one per cell (common name
// "cell:" and the cell id, so that the BBS knows a rep's certificate names its cell and
// lets it act only for that cell), all for server and client use.
func (c Certs) EnsureCells(cellIDs []string) error {
	ca, err := devcerts.LoadOrCreateCA(c.Dir)
	if err != nil {
		return err
	}
	if err := devcerts.EnsureCert(ca, c.Dir, "auctioneer", AuctioneerCommonName, c.hostsFor("auctioneer", componentHosts)); err != nil {
		return err
	}
	for _, id := range cellIDs {
		if err := devcerts.EnsureCert(ca, c.Dir, "rep-"+id, bbsconfig.DefaultCellIdentityPrefix+id, c.hostsFor("rep-"+id, componentHosts)); err != nil {
			return err
		}
	}
	return nil
}

// Auctioneer is the auctioneer's certificate and key.
func (c Certs) Auctioneer() tlsconfig.Files { return c.pair("auctioneer") }

// Converger is the converger's (client) certificate and key.
func (c Certs) Converger() tlsconfig.Files { return c.pair("converger") }

// Rep is the certificate and key of the rep of cellID.
func (c Certs) Rep(cellID string) tlsconfig.Files { return c.pair("rep-" + cellID) }

// CAFile is the CA certificate every drover process trusts.
func (c Certs) CAFile() string { return filepath.Join(c.Dir, "ca.crt") }

// Server is the BBS's certificate and key (valid for 127.0.0.1 and localhost).
func (c Certs) Server() tlsconfig.Files { return c.pair("bbs") }

// Client is the certificate and key a client presents to the BBS.
func (c Certs) Client() tlsconfig.Files { return c.pair("client") }

// ClientTLS is the client side mTLS configuration.
func (c Certs) ClientTLS() (*tls.Config, error) { return c.Client().Client() }

func (c Certs) pair(name string) tlsconfig.Files {
	return tlsconfig.Files{
		CAFile:   c.CAFile(),
		CertFile: filepath.Join(c.Dir, name+".crt"),
		KeyFile:  filepath.Join(c.Dir, name+".key"),
	}
}
