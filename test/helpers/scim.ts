import request from 'supertest';

export const SCIM_JSON = 'application/scim+json';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

/** SCIM calls to flowgate at `url` with the provisioning bearer `token`, as an identity provider makes them. */
export const scimCalls = (url: string, token: string) => {
  const auth = `Bearer ${token}`;
  const withBody = (call: request.Test, body: object) => call.set('Authorization', auth).set('Content-Type', SCIM_JSON).send(JSON.stringify(body));
  return {
    get: (path: string) => request(url).get(`/scim/v2${path}`).set('Authorization', auth),
    post: (path: string, body: object) => withBody(request(url).post(`/scim/v2${path}`), body),
    put: (path: string, body: object) => withBody(request(url).put(`/scim/v2${path}`), body),
    patch: (path: string, ops: object[]) => withBody(request(url).patch(`/scim/v2${path}`), { schemas: [PATCH_OP], Operations: ops }),
    delete: (path: string) => request(url).delete(`/scim/v2${path}`).set('Authorization', auth),
  };
};
