/*-------------------------------------------------------------------------
 *
 * kafka_pg.h
 *	  Settings shared by every component (defined in src/main/kafka_pg.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef KP_MAIN_H
#define KP_MAIN_H

extern char *kp_database;
extern int	kp_max_partitions;

#endif							/* KP_MAIN_H */
