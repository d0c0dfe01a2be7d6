/** flowgate's UI paths, relative to the base path. Sign-in and sign-out share OIDC's paths. */
export const UI_PATHS = {
  app: '/flowgate/ui/',
  assets: '/flowgate/ui/assets/',
  login: '/flowgate/login',
  logout: '/flowgate/logout',
  loggedOut: '/flowgate/logged-out',
} as const;

/** The built front-end files flowgate serves (names fixed by ui/build.mjs). */
export const ASSET_FILES = ['app.js', 'app.css', 'menu.js', 'menu.css', 'sign-in.js'] as const;
