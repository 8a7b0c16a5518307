/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  Settings that belong to no one component, defined and registered by
 *	  src/main/kafka_pg.c.  Components read them through this header, never
 *	  by including anything of src/main (which sits above them all).
 *	  Settings of one component are declared in that component's header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_SETTINGS_H
#define KP_SETTINGS_H

extern char *kp_database;
extern int	kp_max_partitions;

#endif							/* KP_SETTINGS_H */
