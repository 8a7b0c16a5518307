/*-------------------------------------------------------------------------
 *
 * security.c
 *	  The listener's security settings (kafka.security_protocol, the SASL
 *	  mechanisms, re-authentication, kafka.allowed_addresses,
 *	  kafka.allow_anonymous), the address allowlist checked at accept, and
 *	  the safe default: on an address other than loopback the listener does
 *	  not start without authentication unless anonymous access is allowed.
 *
 * The SASL exchange itself is sasl.c; TLS is tls.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "utils/guc.h"
#include "utils/memutils.h"

#include "listener/listener.h"
#include "listener/sasl.h"
#include "listener/tls.h"


/* settings */
int			kp_security_protocol = KP_SECURITY_PLAINTEXT;
bool		kp_allow_anonymous = false;
bool		kp_sasl_plain_allow_plaintext = false;
char	   *kp_sasl_enabled_mechanisms = NULL;
int			kp_connections_max_reauth_ms = 0;
char	   *kp_allowed_addresses = NULL;

static const struct config_enum_entry security_protocol_options[] = {
	{"PLAINTEXT", KP_SECURITY_PLAINTEXT, false},
	{"SASL_PLAINTEXT", KP_SECURITY_SASL_PLAINTEXT, false},
	{"SSL", KP_SECURITY_SSL, false},
	{"SASL_SSL", KP_SECURITY_SASL_SSL, false},
	{"plaintext", KP_SECURITY_PLAINTEXT, true},
	{"sasl_plaintext", KP_SECURITY_SASL_PLAINTEXT, true},
	{"ssl", KP_SECURITY_SSL, true},
	{"sasl_ssl", KP_SECURITY_SASL_SSL, true},
	{NULL, 0, false}
};

/* ---------------------------------------------------------------------
 * Settings, the safe default and the address allowlist
 * ---------------------------------------------------------------------
 */

static bool
check_mechanisms(char **newval, void **extra, GucSource source)
{
	char	   *copy = pstrdup(*newval);
	char	   *tok;
	char	   *save;

	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
	{
		if (strcmp(tok, "SCRAM-SHA-256") != 0 && strcmp(tok, "SCRAM-SHA-512") != 0 &&
			strcmp(tok, "PLAIN") != 0)
		{
			GUC_check_errdetail("unsupported SASL mechanism \"%s\": SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN are supported", tok);
			pfree(copy);
			return false;
		}
	}
	pfree(copy);
	return true;
}

/* Parse "a.b.c.d/n" or "x::y/n" (no /n: one address); false if invalid. */
static bool
parse_cidr(const char *s, int *family, uint8 *addr, int *bits)
{
	char		buf[INET6_ADDRSTRLEN + 8];
	char	   *slash;

	if (strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		*family = AF_INET6;
	else
		return false;
	*bits = *family == AF_INET ? 32 : 128;
	if (slash)
	{
		char	   *end;
		long		n = strtol(slash + 1, &end, 10);

		if (end == slash + 1 || *end != '\0' || n < 0 || n > *bits)
			return false;
		*bits = (int) n;
	}
	return true;
}

static bool
check_allowed_addresses(char **newval, void **extra, GucSource source)
{
	char	   *copy = pstrdup(*newval);
	char	   *tok;
	char	   *save;

	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
	{
		int			family;
		uint8		addr[16];
		int			bits;

		if (!parse_cidr(tok, &family, addr, &bits))
		{
			GUC_check_errdetail("\"%s\" is not an IP address or CIDR block (such as 10.0.0.0/8 or ::1/128)", tok);
			pfree(copy);
			return false;
		}
	}
	pfree(copy);
	return true;
}

void
kp_sasl_define_settings(void)
{
	DefineCustomEnumVariable("kafka.security_protocol",
							 "Security protocol of the Kafka listener (Kafka's listener security protocols).",
							 "PLAINTEXT and SSL: no authentication; SASL_PLAINTEXT and SASL_SSL: SASL login as a PostgreSQL role.",
							 &kp_security_protocol, KP_SECURITY_PLAINTEXT,
							 security_protocol_options,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("kafka.sasl_enabled_mechanisms",
							   "SASL mechanisms offered (Kafka's sasl.enabled.mechanisms).",
							   "SCRAM-SHA-256 and PLAIN are checked against the role's PostgreSQL password, SCRAM-SHA-512 against a credential set with AlterUserScramCredentials.",
							   &kp_sasl_enabled_mechanisms, "SCRAM-SHA-256,PLAIN",
							   PGC_SIGHUP, GUC_LIST_INPUT, check_mechanisms, NULL, NULL);
	DefineCustomBoolVariable("kafka.sasl_plain_allow_plaintext",
							 "Offer SASL/PLAIN on a listener without TLS (the password crosses the network in clear).",
							 NULL, &kp_sasl_plain_allow_plaintext, false,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("kafka.allow_anonymous",
							 "Let the listener serve unauthenticated clients on an address other than loopback.",
							 NULL, &kp_allow_anonymous, false,
							 PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("kafka.connections_max_reauth_ms",
							"Lifetime of a SASL session before the client must re-authenticate (Kafka's connections.max.reauth.ms, KIP-368); 0: unlimited.",
							NULL, &kp_connections_max_reauth_ms, 0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomStringVariable("kafka.allowed_addresses",
							   "Client addresses the listener accepts, a list of CIDR blocks (in the spirit of pg_hba.conf); empty: any.",
							   NULL, &kp_allowed_addresses, "",
							   PGC_SIGHUP, GUC_LIST_INPUT, check_allowed_addresses, NULL, NULL);
	kp_tls_define_settings();
}

/* Does the listener ask clients to log in? */
bool
kp_sasl_enabled(void)
{
	return kp_security_protocol == KP_SECURITY_SASL_PLAINTEXT ||
		kp_security_protocol == KP_SECURITY_SASL_SSL;
}

/* Does kafka.listen_address name only loopback addresses? */
static bool
listen_address_is_loopback(void)
{
	const char *a = kp_listen_address ? kp_listen_address : "";
	uint8		addr[16];

	if (strcmp(a, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, a, addr) == 1)
		return addr[0] == 127;
	if (inet_pton(AF_INET6, a, addr) == 1)
		return memcmp(addr, &in6addr_loopback, 16) == 0;
	return false;				/* empty, '*', a host name: may be reachable */
}

bool
kp_listener_start_allowed(void)
{
	if (kp_tls_enabled() && !kp_tls_load(LOG))
	{
		ereport(LOG,
				(errmsg("kafka_pg: not starting the Kafka listener: kafka.security_protocol is %s but TLS could not be set up",
						kp_security_protocol == KP_SECURITY_SSL ? "SSL" : "SASL_SSL")));
		return false;
	}
	if (kp_sasl_enabled() || kp_allow_anonymous || listen_address_is_loopback())
		return true;
	ereport(LOG,
			(errmsg("kafka_pg: not starting the Kafka listener: kafka.listen_address \"%s\" is not a loopback address and kafka.security_protocol is %s, without authentication, so any client that can reach it would act as a superuser",
					kp_listen_address, kp_security_protocol == KP_SECURITY_SSL ? "SSL" : "PLAINTEXT"),
			 errhint("Set kafka.security_protocol = 'SASL_SSL' or 'SASL_PLAINTEXT' so clients log in as PostgreSQL roles, or set kafka.allow_anonymous = on to serve anonymous clients anyway.")));
	return false;
}

bool
kp_address_allowed(const struct sockaddr *sa)
{
	char	   *copy;
	char	   *tok;
	char	   *save;
	const uint8 *peer;
	int			peer_family = sa->sa_family;
	uint8		mapped[4];
	bool		allowed = false;

	if (kp_allowed_addresses == NULL || kp_allowed_addresses[0] == '\0')
		return true;
	if (peer_family == AF_INET)
		peer = (const uint8 *) &((const struct sockaddr_in *) sa)->sin_addr;
	else if (peer_family == AF_INET6)
	{
		peer = (const uint8 *) &((const struct sockaddr_in6 *) sa)->sin6_addr;
		/* an IPv4 client on a dual-stack socket: ::ffff:a.b.c.d */
		if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *) peer))
		{
			memcpy(mapped, peer + 12, 4);
			peer = mapped;
			peer_family = AF_INET;
		}
	}
	else
		return false;

	copy = pstrdup(kp_allowed_addresses);
	for (tok = strtok_r(copy, ", ", &save); tok && !allowed; tok = strtok_r(NULL, ", ", &save))
	{
		int			family;
		uint8		net[16];
		int			bits;
		int			i;

		if (!parse_cidr(tok, &family, net, &bits) || family != peer_family)
			continue;
		allowed = true;
		for (i = 0; i < bits; i++)
		{
			uint8		m = 0x80 >> (i % 8);

			if ((net[i / 8] & m) != (peer[i / 8] & m))
			{
				allowed = false;
				break;
			}
		}
	}
	pfree(copy);
	return allowed;
}
