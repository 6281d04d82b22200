package iceberg

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/sluice-data/sluice/store"
)

// Catalog is an Iceberg REST catalog (the Iceberg REST OpenAPI: Apache
// Polaris, Nessie, Lakekeeper, Gravitino, AWS Glue's and S3 Tables' REST
// endpoints, and others): it names each table's current metadata.
type Catalog struct {
	// URI is the catalog's base URI, before /v1; a warehouse=NAME query
	// parameter is passed to its configuration request.
	URI string
	// Token is a bearer token for every request. Credential, as
	// CLIENT_ID:CLIENT_SECRET, gets one from the catalog's OAuth2 token
	// endpoint (client credentials) when Token is empty. Neither: no
	// authentication.
	Token, Credential string
	// Scope is the OAuth2 scope asked for with Credential (default
	// "catalog").
	Scope string
	// Client makes the requests (nil: http.DefaultClient).
	Client *http.Client

	prefix string // the catalog's path prefix, from its configuration
	ready  bool
}

// CatalogFromEnv is a catalog at uri authenticated as the environment
// says: SLUICE_ICEBERG_TOKEN, else SLUICE_ICEBERG_CREDENTIAL
// (CLIENT_ID:CLIENT_SECRET) with SLUICE_ICEBERG_SCOPE.
func CatalogFromEnv(uri string) *Catalog {
	return &Catalog{URI: uri, Token: os.Getenv("SLUICE_ICEBERG_TOKEN"), Credential: os.Getenv("SLUICE_ICEBERG_CREDENTIAL"), Scope: os.Getenv("SLUICE_ICEBERG_SCOPE")}
}

// Load reads the table ident names (namespace levels and the table name,
// dot-separated: db.events, or a.b.events) from the catalog, at the
// snapshot opts asks for. Its metadata comes with the catalog's answer;
// its manifests and data files are read from the stores open opens.
func (c *Catalog) Load(ctx context.Context, ident string, opts Options) (*Table, error) {
	dot := strings.LastIndex(ident, ".")
	if dot <= 0 || dot == len(ident)-1 {
		return nil, invalid{fmt.Errorf("iceberg: %q: name a table as NAMESPACE.TABLE", ident)}
	}
	if err := c.configure(ctx); err != nil {
		return nil, err
	}
	ns := strings.ReplaceAll(ident[:dot], ".", "\x1f") // levels, as the REST API separates them
	path := "/v1/" + c.prefix + "namespaces/" + url.PathEscape(ns) + "/tables/" + url.PathEscape(ident[dot+1:])
	var res struct {
		Location string          `json:"metadata-location"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := c.get(ctx, path, nil, &res); err != nil {
		return nil, fmt.Errorf("iceberg: table %s: %w", ident, err)
	}
	if len(res.Metadata) == 0 {
		return nil, fmt.Errorf("iceberg: table %s: the catalog's answer holds no metadata", ident)
	}
	where := res.Location
	if where == "" {
		where = c.URI + " " + ident
	}
	return fromMetadata(where, res.Metadata, opts)
}

// configure reads the catalog's configuration once: the path prefix its
// other requests take.
func (c *Catalog) configure(ctx context.Context) error {
	if c.ready {
		return nil
	}
	base, err := url.Parse(c.URI)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return invalid{fmt.Errorf("iceberg: catalog %q: want an http:// or https:// URI", c.URI)}
	}
	q := base.Query()
	base.RawQuery = ""
	c.URI = strings.TrimSuffix(base.String(), "/")
	if c.Token == "" && c.Credential != "" {
		if c.Token, err = c.oauthToken(ctx); err != nil {
			return err
		}
	}
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	params := url.Values{}
	if w := q.Get("warehouse"); w != "" {
		params.Set("warehouse", w)
	}
	if err := c.get(ctx, "/v1/config", params, &cfg); err != nil {
		return fmt.Errorf("iceberg: catalog %s: %w", c.URI, err)
	}
	prefix := cfg.Defaults["prefix"]
	if p, ok := cfg.Overrides["prefix"]; ok {
		prefix = p
	}
	if prefix != "" {
		c.prefix = strings.Trim(prefix, "/") + "/"
	}
	c.ready = true
	return nil
}

// oauthToken exchanges Credential for a token (OAuth2 client
// credentials, the catalog's /v1/oauth/tokens).
func (c *Catalog) oauthToken(ctx context.Context) (string, error) {
	id, secret, ok := strings.Cut(c.Credential, ":")
	if !ok {
		id, secret = "", c.Credential
	}
	// The scope Java's and PyIceberg's clients ask for unless told; Apache
	// Polaris wants PRINCIPAL_ROLE:ALL (SLUICE_ICEBERG_SCOPE).
	scope := cmp.Or(c.Scope, "catalog")
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URI+"/v1/oauth/tokens", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var tok struct {
		Token string `json:"access_token"`
	}
	if err := c.do(req, &tok); err != nil {
		return "", fmt.Errorf("iceberg: catalog %s: a token for the credential: %w", c.URI, err)
	}
	if tok.Token == "" {
		return "", fmt.Errorf("iceberg: catalog %s: the token endpoint gave no access_token", c.URI)
	}
	return tok.Token, nil
}

func (c *Catalog) get(ctx context.Context, path string, params url.Values, out any) error {
	u := c.URI + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return c.do(req, out)
}

// do sends req and decodes its JSON answer into out; a refusal is an
// error of the store's kinds (not found, permission), in one line with
// the catalog's own message.
func (c *Catalog) do(req *http.Request, out any) error {
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := resp.Status
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			// The catalog's words, on one line.
			msg += ": " + strings.Join(strings.Fields(e.Error.Message), " ")
		}
		kind := store.KindPermanent
		switch resp.StatusCode {
		case http.StatusNotFound:
			kind = store.KindNotFound
		case http.StatusUnauthorized, http.StatusForbidden:
			kind = store.KindPermission
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			kind = store.KindRetryable
		}
		return &store.Error{Op: "read", URL: req.URL.Redacted(), Kind: kind, Err: errors.New(msg)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: not the catalog's JSON: %v", req.URL.Redacted(), err)
	}
	return nil
}
